"""A launch line's arguments resolved as the shell would once the launcher's own arguments and
environment are known: ``verify run.sh -- ARGS`` (:mod:`bf16_migrate.verify.launch`).

``python train.py --steps "${STEPS:-40}" --batch-size 32 "$@"`` is, as the file reads, a launch
with two computed words. Run as ``./run.sh --lr 0.1`` from a shell where ``STEPS`` is unset, bash
gives ``--steps 40 --batch-size 32 --lr 0.1`` (bash(1), "Parameter Expansion": ``${X:-word}`` is
``word`` when ``X`` is unset or empty; "Special Parameters": ``"$@"`` is the positional
parameters, each one word). :func:`resolve_args` reads the words through the script's own
assignments (:class:`.expand.Expander`) with the environment and the arguments given, and says
which values it took (:attr:`ResolvedArgs.used`). A variable unset without a default, a
command substitution, or a word that takes different values on different paths stays computed
(``None``): the launch is then not verified, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .expand import COMPUTED, Expander
from .words import positional_all


@dataclass(frozen=True)
class ResolvedArgs:
    """The words passed to the script (``None`` where still computed) and what gave them:
    ``used`` maps a variable (``STEPS``, ``$1``, ``$@``) to the value taken, ``None`` for a
    variable that is unset (its default taken); ``unknown`` names what stayed computed."""

    words: list[str | None]
    used: dict[str, str | None] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


def resolve_args(
    expander: Expander, nodes: Sequence, at, environ: Mapping[str, str], argv: Sequence[str]
) -> ResolvedArgs:
    """The words of the argument ``nodes`` of the command ``at`` (in the fragment ``expander``
    reads), with ``environ`` the environment the launcher starts in and ``argv`` its own
    arguments (see the module docstring)."""
    data = expander.source.data
    expander.environ, expander.argv, expander.used = environ, list(argv), {}
    words: list[str | None] = []
    unknown: list[str] = []
    try:
        for node in nodes:
            if positional_all(node, data):
                quoted_star = expander.source.t(node).startswith('"') and "*" in expander.source.t(node)
                words.extend([" ".join(argv)] if quoted_star else argv)
                expander.used["$@"] = " ".join(argv)
                continue
            readings = {tuple(e.words): e for e in expander.words([node], at) or []}
            if len(readings) != 1:
                words.append(None)
                unknown.append(f"{expander.source.t(node)} (it has {len(readings)} values, by the path taken)")
                continue
            ((found, expansion),) = readings.items()
            for word in found:
                if word is None or COMPUTED in word:
                    words.append(None)
                    unknown.extend(sorted(expansion.computed) or [expander.source.t(node)])
                else:
                    words.append(word)
        return ResolvedArgs(words, dict(expander.used), list(dict.fromkeys(unknown)))
    finally:
        expander.environ, expander.argv, expander.used = None, None, {}
