"""Defaults from a config file: the model, agent, sandbox and approval a person always types.

Read at startup from `$XDG_CONFIG_HOME/mlagent/config.toml` (default `~/.config/mlagent/`),
then `config.toml` in the home folder (MLAGENT_HOME, default `sessions`), the later file
winning; an option given on the command line wins over both. A file that cannot be read, is not
TOML, or names a key or value no command takes is one line and exit 2 (nothing runs).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from ..core.home import default_home

KEYS = ("model", "agent", "sandbox", "approval")
# Which command takes which key (click's default_map: command name -> option name -> value).
_COMMANDS: dict[str, tuple[str, ...]] = {
    "run": KEYS,
    "bench": ("agent", "sandbox"),
}


class DefaultsError(ValueError):
    """A config file that cannot be used, said in one line."""


def config_files() -> list[Path]:
    """Where defaults are read from, in order (a later file overrides an earlier one)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path(xdg) / "mlagent" / "config.toml", default_home() / "config.toml"]


def read_defaults(paths: list[Path] | None = None) -> dict[str, str]:
    """The keys the files set (a later file wins); a DefaultsError for a bad file."""
    found: dict[str, str] = {}
    for path in config_files() if paths is None else paths:
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise DefaultsError(f"config file {path}: {' '.join(str(exc).split())}") from None
        for key, value in data.items():
            if key not in KEYS:
                raise DefaultsError(
                    f"config file {path}: unknown key {key!r} (known: {', '.join(KEYS)})"
                )
            if not isinstance(value, str) or not value.strip():
                raise DefaultsError(f"config file {path}: {key} must be a non-empty string")
            found[key] = value.strip()
    return found


def default_map(values: dict[str, str]) -> dict[str, Any]:
    """click's default_map for these values: the top level (the app itself) and each command
    that takes them."""
    mapping: dict[str, Any] = dict(values)
    for command, keys in _COMMANDS.items():
        mapping[command] = {k: v for k, v in values.items() if k in keys}
    return mapping
