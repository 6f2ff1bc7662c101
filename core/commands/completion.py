"""Shell completion for ``tokenbox`` and ``tokenbox-tui``: ``--print-completion bash|zsh|fish`` prints a
script made from the command's own argument parser, so every subcommand and flag is in it the moment
it is added, with no code per flag.

The scripts are static: pressing Tab runs no Python. What a flag's value completes to is read off the
parser: its ``choices`` (``--trimming``, ``--format``, ``--agent``…), the tokenizer names the registry
knows when the script is printed (``--tokenizer``), files where the metavar is ``FILE`` (and for the
FILE argument), folders where it is ``DIR``; other values (numbers, addresses) complete to nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from tokenbox.core.model.records import dataclass, replace

SHELLS = ("bash", "zsh", "fish")
FILE, DIR = "FILE", "DIR"  # metavars whose values are paths
SAFE_WORD = re.compile(r"[A-Za-z0-9_.:+@%/-]+")  # a value put in a script as is (no quoting needed anywhere)


@dataclass(frozen=True)
class Option:
    """One flag: its spellings, its help, and what its value completes to (``None``: it takes no value)."""

    names: tuple[str, ...]
    help: str
    value: Value | None


@dataclass(frozen=True)
class Value:
    """What a value completes to: ``words``, or a file or a folder (``path`` is ``FILE`` or ``DIR``)."""

    words: tuple[str, ...] = ()
    path: str | None = None
    label: str = "value"  # what zsh says it wants (the flag's metavar: N, NAME, HOST:PORT)
    optional: bool = False  # the flag may go without its value (``nargs="?"``)


@dataclass(frozen=True)
class Command:
    """A parser read for completion: its flags, its positional argument's value, and its subcommands."""

    name: str
    help: str
    options: tuple[Option, ...]
    argument: Value | None
    subcommands: tuple[Command, ...] = ()


class PrintCompletion(argparse.Action):
    """``--print-completion SHELL``: print the completion script of the parser it belongs to, and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, choices=SHELLS, metavar="SHELL", help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sys.stdout.write(script(parser, str(values)))
        parser.exit()


def add_completion_flag(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` the ``--print-completion SHELL`` flag."""
    parser.add_argument("--print-completion", action=PrintCompletion,
                        help=f"print the {parser.prog} completion script for bash, zsh or fish and exit (see README)")


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of ``SHELLS``)."""
    command = read_parser(parser, parser.prog)
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](command)


def read_parser(parser: argparse.ArgumentParser, name: str, help_text: str = "") -> Command:
    """The flags, argument and subcommands of ``parser``. argparse has no public way to list them: its
    ``_actions`` is the one list of every argument, the subparsers action's ``choices`` maps each
    subcommand to its parser and its ``_choices_actions`` hold their help (all there since Python 3.2)."""
    options: list[Option] = []
    argument: Value | None = None
    subcommands: list[Command] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}  # each add_parser(help=…)
            for sub_name, sub_parser in action.choices.items():
                subcommands.append(read_parser(sub_parser, sub_name, helps.get(sub_name) or sub_parser.description or ""))
        elif action.option_strings:
            if action.help != argparse.SUPPRESS:
                takes_value = action.nargs != 0
                options.append(Option(tuple(action.option_strings), _one_line(action.help),
                                      replace(_value(action), optional=action.nargs == "?") if takes_value else None))
        elif argument is None:
            argument = _value(action)
    return Command(name, _one_line(help_text), tuple(options), argument, tuple(subcommands))


def _value(action: argparse.Action) -> Value:
    label = str(action.metavar or action.dest).lower() if isinstance(action.metavar or action.dest, str) else "value"
    if action.choices is not None:
        return Value(words=tuple(str(choice) for choice in action.choices if SAFE_WORD.fullmatch(str(choice))), label=label)
    if "--tokenizer" in action.option_strings:
        # start-up: the registry (and its entry points) only when a script is printed
        from tokenbox.core.tokens.tokenizers import default_registry

        return Value(words=tuple(name for name in default_registry().names() if SAFE_WORD.fullmatch(name)), label=label)
    if action.metavar in (FILE, DIR):
        return Value(path=str(action.metavar), label=label)
    return Value(label=label)


def _one_line(text: str | None) -> str:
    """A help text as a shell shows it beside the word: one line, without its remarks in parentheses
    (``(default …)``, ``(see …)``; a formula's ``(1 - headroom)`` stays), to its first ``;``, at most 80
    characters."""
    if not text:
        return ""
    line = " ".join(text.replace("%%", "%").split())
    line = re.sub(r" \((?![0-9])[^()]*\)", "", line).split("; ", 1)[0]
    if line.count("(") > line.count(")"):  # the ``;`` was inside a remark that stayed: drop the remark
        line = line[: line.rindex(" (")]
    return line if len(line) <= 80 else line[:79] + "…"


def _function(command: Command) -> str:
    return "_" + re.sub(r"[^A-Za-z0-9]", "_", command.name) + "_complete"


# ------------------------------------------------------------------------------------------------ bash

def bash(command: Command) -> str:
    """A bash script: ``complete -F`` with a function that finds the subcommand, then completes the flags,
    a flag's value (also after ``--flag=``) or the argument. Candidates are read one per line, so a file
    name with spaces or ``*`` stays one candidate, as it is."""
    function = _function(command)
    lines = [
        f"# bash completion for {command.name} (made by `{command.name} --print-completion bash`)",
        f"{function}_reply() {{  # COMPREPLY: what compgen \"$@\" offers for $cur, one candidate a line",
        "    local line",
        "    COMPREPLY=()",
        '    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$@" -- "$cur")',
        "}",
        f"{function}() {{",
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub='' i word",
        '    if [[ $cur == "=" ]]; then cur=""; elif [[ $prev == "=" ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi',
        "    COMPREPLY=()",
    ]
    if command.subcommands:
        skip = " ".join(n for option in command.options if option.value is not None for n in option.names)
        lines += [
            "    for ((i = 1; i < COMP_CWORD; i++)); do  # the subcommand: the first word that is no flag or flag value",
            "        word=${COMP_WORDS[i]}",
            *([f'        if [[ " {skip} " == *" $word "* ]]; then ((i++)); continue; fi'] if skip else []),
            '        if [[ $word != -* && $word != "=" ]]; then sub=$word; break; fi',
            "    done",
            '    case "$sub" in',
        ]
        for sub in command.subcommands:
            lines.append(f"        {sub.name})")
            lines += _bash_body(function, sub, "            ")
            lines.append("            ;;")
        lines.append("        *)")
        lines += _bash_body(function, command, "            ", words=[sub.name for sub in command.subcommands])
        lines += ["            ;;", "    esac"]
    else:
        lines += _bash_body(function, command, "    ")
    lines += ["}", f"complete -F {function} {command.name}", ""]
    return "\n".join(lines)


def _bash_body(function: str, command: Command, indent: str, words: Sequence[str] = ()) -> list[str]:
    """Complete a flag's value, a flag, then a subcommand name (``words``) or the argument."""
    lines = []
    valued = [option for option in command.options if option.value is not None]
    if valued:
        lines.append(f'{indent}case "$prev" in')
        for option in valued:
            lines.append(f"{indent}    {'|'.join(option.names)}) {_bash_values(function, option.value)}; return;;")  # type: ignore[arg-type]
        lines.append(f"{indent}esac")
    flags = " ".join(name for option in command.options for name in option.names)
    lines.append(f'{indent}if [[ $cur == -* ]]; then {function}_reply -W "{flags}"; return; fi')
    if words:
        lines.append(f'{indent}{function}_reply -W "{" ".join(words)}"')
    elif command.argument is not None and (command.argument.path or command.argument.words):
        lines.append(f"{indent}{_bash_values(function, command.argument)}")
    return lines


def _bash_values(function: str, value: Value) -> str:
    if value.path == FILE:
        return f"compopt -o filenames 2>/dev/null; {function}_reply -f"
    if value.path == DIR:
        return f"compopt -o filenames 2>/dev/null; {function}_reply -d"
    if value.words:
        return f'{function}_reply -W "{" ".join(value.words)}"'
    return ":"  # a free value (a number, an address): nothing to offer


# ------------------------------------------------------------------------------------------------- zsh

def zsh(command: Command) -> str:
    """A zsh script for ``compinit``: ``_arguments`` specs with each flag's help; works from ``fpath`` (as
    ``_NAME``) or evaluated (it then registers itself with ``compdef``)."""
    function = _function(command)
    lines = [f"#compdef {command.name}", f"# zsh completion for {command.name} (made by `{command.name} --print-completion zsh`)",
             f"{function}() {{"]
    if command.subcommands:
        lines += ["    local curcontext=$curcontext state line", "    typeset -A opt_args",
                  "    _arguments -C \\"]
        lines += [f"        {spec} \\" for spec in _zsh_options(command)]
        names = " ".join(f"{sub.name}\\:{_zsh_quote_description(sub.help)}" for sub in command.subcommands)
        lines += [f"        {_zsh_single(f'1:command:(({names}))')} \\", "        '*::argument:->argument'",
                  '    case $state in', "        argument)", '            case $line[1] in']
        for sub in command.subcommands:
            specs = _zsh_options(sub) + _zsh_argument(sub)
            lines.append(f"                {sub.name}) _arguments {' '.join(specs)} ;;" if specs else f"                {sub.name}) ;;")
        lines += ["            esac", "            ;;", "    esac"]
    else:
        specs = _zsh_options(command) + _zsh_argument(command)
        lines += ["    _arguments \\"] + [f"        {spec} \\" for spec in specs[:-1]] + [f"        {specs[-1]}"]
    lines += [
        "}",
        'if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then',
        f'    {function} "$@"',
        "else",
        f"    compdef {function} {command.name}",
        "fi",
        "",
    ]
    return "\n".join(lines)


def _zsh_options(command: Command) -> list[str]:
    """One ``_arguments`` spec per flag: ``'--flag=[help]:value:action'`` (the value after ``=`` or as the
    next word), and ``'(-h --help)'{-h,--help}'[help]'`` for a flag with two spellings."""
    specs = []
    for option in command.options:
        body = f"[{_zsh_escape(option.help)}]"
        if option.value is not None:
            body += ("::" if option.value.optional else ":") + _zsh_action(option.value)
        if len(option.names) == 1:
            name = option.names[0]
            equals = "=" if option.value is not None and name.startswith("--") else ""
            specs.append(_zsh_single(f"{name}{equals}{body}"))
        else:
            specs.append(_zsh_single("(" + " ".join(option.names) + ")") + "{" + ",".join(option.names) + "}" + _zsh_single(body))
    return specs


def _zsh_argument(command: Command) -> list[str]:
    return [_zsh_single(":" + _zsh_action(command.argument))] if command.argument is not None else []


def _zsh_action(value: Value) -> str:
    """``message:action`` of an ``_arguments`` spec (a message without an action: nothing to offer)."""
    message = _zsh_escape(value.label)
    if value.path == FILE:
        return f"{message}:_files"
    if value.path == DIR:
        return f"{message}:_files -/"
    if value.words:
        return f"{message}:(" + " ".join(value.words) + ")"
    return f"{message}: "


def _zsh_escape(text: str) -> str:
    """Help text inside an ``_arguments`` ``[…]``: its brackets and colons escaped."""
    return re.sub(r"([\[\]:\\])", r"\\\1", text)


def _zsh_quote_description(text: str) -> str:
    return re.sub(r"([\[\]:\\ ()])", r"\\\1", text)


def _zsh_single(text: str) -> str:
    """``text`` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


# ------------------------------------------------------------------------------------------------ fish

def fish(command: Command) -> str:
    """A fish script: one ``complete`` line per subcommand and flag, with their help."""
    name = command.name
    lines = [f"# fish completion for {name} (made by `{name} --print-completion fish`)", f"complete -c {name} -f"]
    if command.subcommands:
        lines += _fish_options(name, command, "__fish_use_subcommand")
        for sub in command.subcommands:
            lines.append(f"complete -c {name} -n __fish_use_subcommand -a {sub.name} -d {_fish_quote(sub.help)}")
        for sub in command.subcommands:
            condition = f"'__fish_seen_subcommand_from {sub.name}'"
            lines += _fish_options(name, sub, condition)
            lines += _fish_argument(name, sub, condition)
    else:
        lines += _fish_options(name, command, None)
        lines += _fish_argument(name, command, None)
    return "\n".join(lines) + "\n"


def _fish_options(name: str, command: Command, condition: str | None) -> list[str]:
    lines = []
    when = f" -n {condition}" if condition else ""
    for option in command.options:
        spellings = " ".join(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}" for n in option.names)
        line = f"complete -c {name}{when} {spellings}"
        if option.value is not None:
            line += " " + _fish_value(option.value)
        lines.append(line + f" -d {_fish_quote(option.help)}")
    return lines


def _fish_argument(name: str, command: Command, condition: str | None) -> list[str]:
    argument = command.argument
    if argument is None or not (argument.path or argument.words):
        return []
    when = f" -n {condition}" if condition else ""
    offer = "-F" if argument.path == FILE else _fish_value(argument).replace("-x ", "", 1)  # a word, not a flag's value
    return [f"complete -c {name}{when} {offer}"]


def _fish_value(value: Value) -> str:
    if value.path == FILE:
        return "-r -F"
    if value.path == DIR:
        return "-x -a '(__fish_complete_directories)'"
    if value.words:
        return "-x -a " + _fish_quote(" ".join(value.words))
    return "-x"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
