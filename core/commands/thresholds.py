"""Warning levels and the auto-compact buffer: flag > environment > config file > default.

``warn_levels`` are three percentages of the window (75, 90 and 100 by default): the TUI notifies when
usage crosses them, the gauge marks them and the status line colours by them. ``compact_buffer`` is
the distance from the window to the auto-compact threshold (``None``: Claude Code's own formula, see
``tokenbox.core.model.compaction``). Environment: ``TOKENBOX_WARN_LEVELS=70,85,100`` and
``TOKENBOX_COMPACT_BUFFER=40000``; config file (``$XDG_CONFIG_HOME/tokenbox/config.yaml``): keys
``warn_levels`` and ``compact_buffer``. The status line's ``{cost}`` takes the config file's ``prices``
(``prices_in_force``). Light on purpose: the status line reads these on every run, so the config file
is parsed (YAML) only when it names one of these keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from tokenbox.core.model.errors import ConfigError

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    from tokenbox.core.model.prices import PriceEntry

DEFAULT_WARN_LEVELS = (75, 90, 100)  # usage percentages that raise a warning, an alarm, an overflow
_MAX_BUFFER = 10**9
_KEYS = ("warn_levels", "compact_buffer", "prices")  # the config file's keys read here


def parse_levels(raw: Any, where: str) -> tuple[int, int, int]:
    """Three increasing percentages from ``"70,85,100"`` or a list; ``ConfigError`` otherwise."""
    items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else None
    try:
        levels = tuple(int(str(item).strip()) for item in items) if items is not None else ()
    except ValueError:
        levels = ()
    if len(levels) != 3 or not all(1 <= level <= 100 for level in levels) or not levels[0] < levels[1] < levels[2]:
        raise ConfigError(f"{where} = {str(raw)[:60]!r} is not three increasing percentages",
                          "write three whole numbers from 1 to 100, e.g. 75,90,100")
    return levels  # type: ignore[return-value]


def parse_buffer(raw: Any, where: str) -> int:
    text = str(raw).strip()
    if isinstance(raw, bool) or not text.isdigit() or int(text) > _MAX_BUFFER:
        raise ConfigError(f"{where} = {text[:40]!r} is not a whole number of tokens", "write e.g. 33000 (0 to 1000000000)")
    return int(text)


def _config_path(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "tokenbox", "config.yaml")


def _config(environ: Mapping[str, str]) -> dict[str, Any]:
    path = _config_path(environ)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(1 << 20)
    except OSError:
        return {}
    if not any(key in text for key in _KEYS):
        return {}
    import yaml  # start-up: PyYAML only when the config file names a key read here (the status line runs often)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})", "fix or remove the config file") from None
    return data if isinstance(data, dict) else {}


def _in_force(
    flag: str | None, environ: Mapping[str, str], config: Mapping[str, Any] | None, names: tuple[str, str, str],
    parse: Callable[[Any, str], Any], default: Any,
) -> Any:
    """The setting in force: the flag, else the environment variable, else the config file's key, else
    ``default``; ``names`` are the three (flag, variable, key), as error messages name them."""
    option, variable, key = names
    if flag is not None:
        return parse(flag, option)
    if environ.get(variable, "").strip():
        return parse(environ[variable], variable)
    config = _config(environ) if config is None else config
    if config.get(key) is not None:
        return parse(config[key], f"{key} in the config file")
    return default


def warn_levels(flag: str | None, environ: Mapping[str, str], config: Mapping[str, Any] | None = None) -> tuple[int, int, int]:
    """The warning levels in force."""
    names = ("--warn-levels", "TOKENBOX_WARN_LEVELS", "warn_levels")
    return _in_force(flag, environ, config, names, parse_levels, DEFAULT_WARN_LEVELS)


def compact_buffer(flag: str | None, environ: Mapping[str, str], config: Mapping[str, Any] | None = None) -> int | None:
    """The auto-compact buffer in force (``None``: Claude Code's own formula)."""
    names = ("--compact-buffer", "TOKENBOX_COMPACT_BUFFER", "compact_buffer")
    return _in_force(flag, environ, config, names, parse_buffer, None)


def prices_in_force(environ: Mapping[str, str], config: Mapping[str, Any] | None = None) -> dict[str, PriceEntry]:
    """The config file's ``prices`` (``{}``: the built-in table alone); a price written without ``as_of``
    is dated the day the config file was last changed."""
    config = _config(environ) if config is None else config
    raw = config.get("prices")
    if raw is None:
        return {}
    from tokenbox.core.model.prices import file_date, parse_overrides  # start-up: the price table only for prices

    return parse_overrides(raw, "prices in the config file", file_date(_config_path(environ)))
