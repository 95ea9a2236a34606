"""Legacy settings a Python script's own ``#!`` line makes (``#!/usr/bin/env -S XLA_USE_BF16=1 python3``).

**What.** ``env`` runs its command with the ``NAME=VALUE`` words before it put in the environment
(GNU coreutils' ``env``; ``-S`` splits the one argument the kernel hands it into words, which is
how a ``#!`` line passes more than one). A script started as ``./train.py`` therefore runs under
the legacy switch its first line sets, a comment to Python that the codemod would otherwise not
read: bf16-migrate said "0 findings" for such a script and left it training under the switch
(found by a hunt of our own: a DP-SGD script whose only setting was its ``#!`` line).

**Fix.** The script is migrated as one its launcher starts with that setting (``launched_with``:
the mode's code change), and the setting in the ``#!`` line is replaced (stochastic mode: by
``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``, which the switch also turned on on Neuron) or removed, only
when the change was made; a refused migration keeps the line and its findings say why. A false
value (``XLA_USE_BF16=0``) is removed and nothing added (BFM002).

Why ``shlex`` and not a shell parser: the line is not shell; ``env -S`` splits its argument with
quotes and backslashes as ``shlex`` in POSIX mode does (coreutils' documentation of ``-S``), and
the words' offsets are found again in the line to edit only the setting.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..rules import STOCHASTIC_ROUNDING_VAR, Mode, Rules, is_truthy

__all__ = ["ShebangSetting", "shebang_settings", "rewrite_shebang"]

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


@dataclass(frozen=True)
class ShebangSetting:
    """One ``NAME=VALUE`` word of the ``#!`` line naming a legacy variable: ``start``/``end`` its
    offsets in the line (characters), ``on`` whether its value turns the switch on."""

    variable: str
    value: str
    start: int
    end: int
    on: bool


def shebang_settings(source: str, rules: Rules) -> list[ShebangSetting]:
    """The legacy settings the first line of ``source`` makes when it is an ``env`` ``#!`` line
    (``#!/usr/bin/env -S XLA_USE_BF16=1 python3``), in the line's order; empty for any other first
    line, or a line ``shlex`` cannot split (an unclosed quote: left as it is, the Python file
    itself does not name the variable there)."""
    line = source.split("\n", 1)[0]
    if not line.startswith("#!"):
        return []
    try:
        words = shlex.split(line[2:], posix=True)
    except ValueError:
        return []
    if not words or words[0].rsplit("/", 1)[-1] != "env":
        return []
    found: list[ShebangSetting] = []
    at = 2
    for word in words[1:]:
        match = _ASSIGNMENT.match(word)
        start = line.find(word, at)
        if start >= 0:
            at = start + len(word)
        if match is None:
            if word.startswith("-"):
                continue  # env's own options (-S, -i)
            break  # the command: what follows is its arguments
        name, value = match.group(1), match.group(2)
        if name in rules.variables and start >= 0:
            found.append(ShebangSetting(name, value, start, start + len(word), is_truthy(value)))
    return found


def rewrite_shebang(code: str, settings: list[ShebangSetting], mode: Mode) -> str:
    """``code`` with the legacy ``settings`` of its first line replaced: the first one that turns
    the switch on becomes ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1`` in stochastic mode (unless the line
    sets that already), every other one is removed with the space before it."""
    line, sep, rest = code.partition("\n")
    stochastic = mode.stochastic_rounding and f"{STOCHASTIC_ROUNDING_VAR}=" not in line
    replaced = False
    for setting in sorted(settings, key=lambda s: s.start, reverse=True):
        start, end = setting.start, setting.end
        if stochastic and setting.on and not replaced and setting is _first_on(settings):
            line = line[:start] + f"{STOCHASTIC_ROUNDING_VAR}=1" + line[end:]
            replaced = True
            continue
        while start > 0 and line[start - 1] in " \t":
            start -= 1
        line = line[:start] + line[end:]
    return line + sep + rest


def _first_on(settings: list[ShebangSetting]) -> ShebangSetting | None:
    return next((s for s in settings if s.on), None)
