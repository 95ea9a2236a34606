"""Text helpers every carrier shares: the legacy variables' names and where a text names them.

The names come from ``rules/XLA_*.toml`` (:func:`bf16_migrate.rules.load_rules`); a carrier
reports any mention outside the entries it understood, so nothing naming a variable goes
unreported.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..rules import load_rules


def legacy_names() -> frozenset[str]:
    """The legacy variable names (the stems of ``rules/XLA_*.toml``), e.g.
    ``frozenset({"XLA_USE_BF16", "XLA_DOWNCAST_BF16", ...})``."""
    return frozenset(load_rules().variables)


def find_mentions(text: str, names: Iterable[str]) -> list[tuple[str, int]]:
    """``(name, offset)`` of each whole-word occurrence of the legacy ``names`` in ``text``
    (character offsets, sorted by offset; ``_`` and alphanumerics are word characters, so
    ``MY_XLA_USE_BF16`` is no mention of ``XLA_USE_BF16``). Never raises."""
    out = []
    for name in names:
        start = 0
        while True:
            k = text.find(name, start)
            if k < 0:
                break
            before = text[k - 1] if k > 0 else " "
            after = text[k + len(name)] if k + len(name) < len(text) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                out.append((name, k))
            start = k + len(name)
    return sorted(out, key=lambda x: x[1])
