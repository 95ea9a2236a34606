"""``[tool.bf16-migrate]`` in ``pyproject.toml``: the project's defaults for the command line.

Found as ruff finds its configuration ("Config file discovery" in ruff's documentation): the
nearest ``pyproject.toml`` with a ``[tool.bf16-migrate]`` table, searched upward from the common
parent directory of the paths given. The command line wins over it. Read with :mod:`tomllib`
(``tomli`` before Python 3.11). Keys:

``mode`` (string), ``exclude`` / ``extend-exclude`` (lists of globs, as ``--exclude``: matched
against a file's name or its path relative to the directory walked; ``--exclude`` on the
command line replaces ``exclude``, ``extend-exclude`` is always added), ``select`` / ``ignore``
(lists of codes or prefixes), ``extend-select`` (added to the selection, as ruff's
``lint.extend-select``), ``per-file-ignores`` (a table of glob -> list of codes, as ruff's
``lint.per-file-ignores``), ``legacy-env`` (a table ``{XLA_USE_BF16 = "1"}`` or a list of
``"KEY=VALUE"``), ``fp32-optimizer-state``, ``respect-gitignore``, ``force-exclude``,
``show-fixes`` (booleans), ``output-format`` (string). Any other key, or a value of the wrong type, is a
:class:`ConfigError` naming the file.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TABLE = "bf16-migrate"


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file (one line)."""


@dataclass(frozen=True)
class Config:
    """The settings read from ``path`` (None: no configuration found); absent keys are None."""

    path: Path | None = None
    mode: str | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] | None = None
    per_file_ignores: dict[str, tuple[str, ...]] | None = None
    legacy_env: dict[str, str] = field(default_factory=dict)
    fp32_optimizer_state: bool | None = None
    helpers_module: str | None = None
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    show_fixes: bool | None = None
    output_format: str | None = None

    @property
    def root(self) -> Path | None:
        """The directory of the configuration file (the project root)."""
        return self.path.parent if self.path is not None else None


_STRINGS = {"mode", "output-format", "helpers-module"}
_LISTS = {"exclude", "extend-exclude", "select", "extend-select", "ignore"}
_BOOLS = {"fp32-optimizer-state", "respect-gitignore", "force-exclude", "show-fixes"}
KEYS = _STRINGS | _LISTS | _BOOLS | {"legacy-env", "per-file-ignores"}


def common_parent(paths: list[Path]) -> Path:
    """The deepest directory holding every path (a file counts by its directory)."""
    dirs = [os.path.abspath(p if os.path.isdir(p) else Path(p).parent) for p in paths] or [os.getcwd()]
    return Path(os.path.commonpath(dirs))


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.bf16-migrate]``
    table (a ``pyproject.toml`` without one is passed over, as ruff does)."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if os.path.isfile(candidate):
            data = read_toml(candidate)
            if TABLE in data.get("tool", {}):
                return candidate
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document ``path`` as a dict. Raises :class:`ConfigError` (one line naming the
    file) when it cannot be read, is not UTF-8, is not TOML, or nests deeper than the parser
    recurses (tomllib parses arrays and inline tables recursively: ``x = [[[...]]]`` thousands
    deep exhausts Python's stack, a ``RecursionError``)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read as TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: cannot be read as TOML: arrays or tables nested too deeply to parse") from None


def load_config(paths: list[Path], explicit: Path | None = None) -> Config:
    """The configuration for a run over ``paths``: ``explicit`` (``--config``) or the nearest
    one found by :func:`find_config` from their common parent; an empty :class:`Config` when
    there is none. Raises :class:`ConfigError` for an unknown key or a wrong type."""
    path = explicit if explicit is not None else find_config(common_parent(paths))
    if path is None:
        return Config()
    data = read_toml(path)
    table = data.get("tool", {}).get(TABLE)
    if table is None:
        if explicit is not None:
            raise ConfigError(f"{path}: no [tool.{TABLE}] table")
        return Config()
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    values: dict[str, Any] = {}  # each value checked against its key's type below
    for key, value in table.items():
        where = f"{path}: [tool.{TABLE}] {key}"
        if key not in KEYS:
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.{TABLE}] (known: {', '.join(sorted(KEYS))})")
        if key in _STRINGS and not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string")
        if key in _BOOLS and not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false")
        if key in _LISTS:
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise ConfigError(f"{where}: expected a list of strings")
            value = tuple(value)
        if key == "legacy-env":
            value = _legacy_env(value, where)
        if key == "per-file-ignores":
            value = _per_file_ignores(value, where)
        values[key.replace("-", "_")] = value
    return Config(path=path, **values)


def _legacy_env(value: object, where: str) -> dict[str, str]:
    if isinstance(value, dict):
        if not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(f'{where}: values must be strings ("1")')
        return dict(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        env = {}
        for item in value:
            key, sep, val = item.partition("=")
            if not sep or not key:
                raise ConfigError(f"{where}: expected KEY=VALUE, got {item!r}")
            env[key] = val
        return env
    raise ConfigError(f'{where}: expected a table {{XLA_USE_BF16 = "1"}} or a list of "KEY=VALUE"')


def _per_file_ignores(value: object, where: str) -> dict[str, tuple[str, ...]]:
    if isinstance(value, dict) and all(
        isinstance(codes, list) and all(isinstance(code, str) for code in codes) for codes in value.values()
    ):
        return {glob: tuple(codes) for glob, codes in value.items()}
    raise ConfigError(f'{where}: expected a table of glob = ["BFMnnn", ...]')
