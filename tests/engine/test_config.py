"""Settings precedence (seed 003): flag > environment > session file > config file > default."""

from __future__ import annotations

import pytest
from tokenbox.core import BadInput, ConfigError, Engine

from tests.engine.helpers import session


def plan_with(env, tmp_path, config=None, flag=None, **top):
    environ = {"XDG_CONFIG_HOME": str(tmp_path), **env}
    if config is not None:
        (tmp_path / "tokenbox").mkdir(exist_ok=True)
        (tmp_path / "tokenbox" / "config.yaml").write_text(config)
    return Engine(environ=environ).plan(session([{"id": "a", "text": "x"}], **top), budget=flag)


def test_default_budget(tmp_path):
    assert plan_with({}, tmp_path).budget.max_ctx == 16384


def test_config_file_below_session(tmp_path):
    assert plan_with({}, tmp_path, config="max_ctx: 9000\n").budget.max_ctx == 9000
    assert plan_with({}, tmp_path, config="max_ctx: 9000\n", budget={"max_ctx": 7000}).budget.max_ctx == 7000


def test_environment_above_session_and_flag_above_all(tmp_path):
    env = {"TOKENBOX_MAX_CTX": "5000"}
    assert plan_with(env, tmp_path, budget={"max_ctx": 7000}).budget.max_ctx == 5000
    assert plan_with(env, tmp_path, flag=3000, budget={"max_ctx": 7000}).budget.max_ctx == 3000


def test_context_max_tokens_for_passepartout_users(tmp_path):
    assert plan_with({"CONTEXT_MAX_TOKENS": "4000"}, tmp_path).budget.max_ctx == 4000
    both = {"CONTEXT_MAX_TOKENS": "4000", "TOKENBOX_MAX_CTX": "4500"}
    assert plan_with(both, tmp_path).budget.max_ctx == 4500


def test_tokenizer_precedence(tmp_path):
    assert plan_with({}, tmp_path, config="tokenizer: cl100k_base\n", tokenizer=None).tokenizer.name == "cl100k_base"
    assert plan_with({"TOKENBOX_TOKENIZER": "heuristic"}, tmp_path, tokenizer="cl100k_base").tokenizer.name == "heuristic"


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1e3", "99999999999"])
def test_bad_environment_values_are_errors(tmp_path, value):
    with pytest.raises(ConfigError, match="TOKENBOX_MAX_CTX"):
        plan_with({"TOKENBOX_MAX_CTX": value}, tmp_path)


def test_bad_config_file_is_an_error_with_its_position(tmp_path):
    with pytest.raises(ConfigError) as info:
        plan_with({}, tmp_path, config="max_ctx: 100\nbogus: 1\n")
    assert info.value.path.endswith("config.yaml") and info.value.line == 2


def test_no_room_left_is_bad_input(tmp_path):
    with pytest.raises(ConfigError, match="no room left"):
        plan_with({}, tmp_path, budget={"max_ctx": 100, "reserve_out": 100})


@pytest.mark.parametrize(
    ("top", "field"),
    [
        ({"model": "no-such-model"}, "model"),  # an unknown model
        ({"model": "claude-sonnet-4"}, "model"),  # a model without a public tokenizer
        ({}, "tokenizer"),  # neither a model nor a tokenizer
        ({"tokenizer": "heuristic", "budget": {"max_ctx": 100, "reserve_out": 100}}, "budget"),
    ],
)
def test_a_settings_error_names_the_field_it_concerns(tmp_path, top, field):
    """Typed, never read from the message: the engine places the error at that key of the file."""
    with pytest.raises(BadInput) as caught:
        Engine(environ={"XDG_CONFIG_HOME": str(tmp_path)}).plan(session([{"id": "a", "text": "x"}], **{"tokenizer": None, **top}))
    assert caught.value.field == field
