"""Shell completion of ``tokenbox`` and ``tokenbox-tui`` (``--print-completion bash|zsh|fish``): the
generated scripts run in the real shells, asked as the shells ask (bash: ``COMP_WORDS``/``COMP_CWORD``
and the function ``complete -F`` names; fish: ``complete -C``)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess

import pytest
from tokenbox.core.commands.cli import build_parser as tokenbox_parser
from tokenbox.core.commands.completion import script
from tokenbox.core.model.session import TRIMMING_POLICIES
from tokenbox.core.tokens.tokenizers import default_registry
from tokenbox.tui.app import main as tui_main
from tokenbox.tui.cli import build_parser as tui_parser

from tests.inprocess import run_main

COMMANDS = {"plan", "render", "check", "import", "record", "tokenizers", "models"}  # README, "The headless command"

# One bash for every question: source both scripts, then for each question set COMP_WORDS and
# COMP_CWORD as bash does before it calls the completion function, and print what it put in COMPREPLY.
ASK = """
ask() {
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
    local function
    function=$(complete -p "$1" | sed -E 's/.*-F ([^ ]+) .*/\\1/')
    "$function"
    printf '%s\\n' "${COMPREPLY[@]}"; printf '\\036\\n'
}
"""


def flags_in_help(parser, *argv: str) -> set[str]:
    """Every flag ``PROG ARGV --help`` shows: an account of the flags independent of how the script was made."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit):
        parser.parse_args([*argv, "--help"])
    return set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", shown.getvalue().split("options:", 1)[1]))


@pytest.fixture(scope="module")
def bash_answers(tmp_path_factory):
    """The bash scripts asked every question of ``QUESTIONS`` in one bash process, run in a folder that
    holds ``dir a/x y.yaml`` and ``notes.txt``."""
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    folder = tmp_path_factory.mktemp("completion")
    (folder / "dir a").mkdir()
    (folder / "dir a" / "x y.yaml").write_text("")
    (folder / "notes.txt").write_text("")
    lines = [script(tokenbox_parser(), "bash"), script(tui_parser(), "bash"), ASK]
    lines += ["ask " + " ".join(f"'{word}'" for word in question) for question in QUESTIONS]
    result = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(lines)], cwd=folder,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and not result.stderr, result.stderr
    answers = [set(filter(None, block.strip("\n").split("\n"))) for block in result.stdout.split("\x1e\n")[:-1]]
    return dict(zip(QUESTIONS, answers, strict=True))


QUESTIONS = [
    ("tokenbox", ""),
    ("tokenbox", "pl"),
    ("tokenbox", "plan", "--tri"),
    ("tokenbox", "plan", "--trimming", ""),
    ("tokenbox", "plan", "--trimming", "=", "pro"),
    ("tokenbox", "render", "--format", ""),
    ("tokenbox", "check", "--tokenizer", ""),
    ("tokenbox", "plan", "--budget", ""),
    ("tokenbox", "plan", "dir a/"),
    ("tokenbox", "--print-completion", ""),
    ("tokenbox", "record", "--out", "no"),
    ("tokenbox-tui", ""),
    ("tokenbox-tui", "-"),
    ("tokenbox-tui", "--se"),
    ("tokenbox-tui", "--claude-project", ""),
    ("tokenbox-tui", "--budget", "900", "--trimming", ""),
    ("tokenbox-tui", "--tokenizer", "cl"),
    ("tokenbox", "plan", "-"),
]


def test_bash_completes_subcommands_flags_and_values(bash_answers):
    names = set(default_registry().names())
    assert bash_answers[("tokenbox", "")] >= COMMANDS
    assert bash_answers[("tokenbox", "pl")] == {"plan"}
    assert bash_answers[("tokenbox", "plan", "--tri")] == {"--trimming"}
    assert bash_answers[("tokenbox", "plan", "--trimming", "")] == set(TRIMMING_POLICIES)
    assert bash_answers[("tokenbox", "plan", "--trimming", "=", "pro")] == {"progressive"}
    assert bash_answers[("tokenbox", "render", "--format", "")] == {"text", "anthropic", "openai"}
    assert bash_answers[("tokenbox", "check", "--tokenizer", "")] == names
    assert bash_answers[("tokenbox", "plan", "--budget", "")] == set()  # a number: nothing to offer
    assert bash_answers[("tokenbox", "--print-completion", "")] == {"bash", "zsh", "fish"}
    assert bash_answers[("tokenbox", "record", "--out", "no")] == {"notes.txt"}
    assert bash_answers[("tokenbox", "plan", "-")] == flags_in_help(tokenbox_parser(), "plan")


def test_bash_completes_files_with_spaces_as_one_candidate(bash_answers):
    assert bash_answers[("tokenbox", "plan", "dir a/")] == {"dir a/x y.yaml"}
    assert bash_answers[("tokenbox-tui", "")] == {"dir a", "notes.txt"}
    assert bash_answers[("tokenbox-tui", "--claude-project", "")] == {"dir a"}  # a folder: no files


def test_bash_completes_every_tui_flag(bash_answers):
    assert bash_answers[("tokenbox-tui", "-")] == flags_in_help(tui_parser())
    assert bash_answers[("tokenbox-tui", "--se")] == {"--serve"}
    assert bash_answers[("tokenbox-tui", "--budget", "900", "--trimming", "")] == set(TRIMMING_POLICIES)
    assert bash_answers[("tokenbox-tui", "--tokenizer", "cl")] == {n for n in default_registry().names() if n.startswith("cl")}


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish shell installed (Debian: apt-get install fish)")
def test_fish_completes_subcommands_flags_and_values(tmp_path):
    (tmp_path / "tokenbox.fish").write_text(script(tokenbox_parser(), "fish"))
    (tmp_path / "tokenbox-tui.fish").write_text(script(tui_parser(), "fish"))
    (tmp_path / "dir a").mkdir()
    questions = ["tokenbox ", "tokenbox plan --trimming ", "tokenbox render --for", "tokenbox-tui --claude-project ", "tokenbox-tui --serv"]
    body = "; ".join(["source tokenbox.fish", "source tokenbox-tui.fish"]
                     + [f"complete -C '{question}'; echo '\x1e'" for question in questions])
    result = subprocess.run(["fish", "--no-config", "-c", body], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and not result.stderr, result.stderr
    answers = [{line.split("\t")[0] for line in block.strip("\n").split("\n") if line}
               for block in result.stdout.split("\x1e\n")[:-1]]
    assert answers[0] >= COMMANDS
    assert answers[1] == set(TRIMMING_POLICIES)
    assert answers[2] == {"--format"}
    assert answers[3] == {"dir a/"}
    assert answers[4] == {"--serve"}


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh installed (Debian: apt-get install zsh)")
def test_zsh_scripts_parse_and_register_themselves(tmp_path):
    for name, parser in (("tokenbox", tokenbox_parser()), ("tokenbox-tui", tui_parser())):
        path = tmp_path / f"_{name}"
        path.write_text(script(parser, "zsh"))
        # evaluated in a shell (not autoloaded), the script hands its function to compdef
        check = f"compdef() {{ print -r -- \"$@\" }}; source {path}"
        result = subprocess.run(["zsh", "-f", "-c", check], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0 and not result.stderr, result.stderr
        assert result.stdout.split() == [f"_{name.replace('-', '_')}_complete", name]


def test_a_bad_shell_is_one_line_exit_2(capsys):
    result = run_main(["--print-completion", "tcsh"])
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1 and b"invalid choice: 'tcsh'" in result.stderr
    assert tui_main(["--print-completion", "tcsh"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenbox: error: argument --print-completion: invalid choice") and err.count("\n") == 1
