"""Shared test helpers: an isolated environment (no user config, no env overrides) for every test."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

# Machines differ: never fail a property test on how long generating or running an example takes.
settings.register_profile(
    "tokenbox",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile("tokenbox")

_ENV_VARS = (
    "TOKENBOX_MAX_CTX",
    "TOKENBOX_TOKENIZER",
    "CONTEXT_MAX_TOKENS",
    "TOKENBOX_MAX_FILE_SIZE",
    "TOKENBOX_CACHE",
)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never see the developer's config file or tokenbox environment variables."""
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
