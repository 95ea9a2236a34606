"""The wording of a finding in a run that writes nothing (``--check``, ``--diff``).

The codemod and the carriers word a fixed finding as done ("XLA_USE_BF16 replaced by
NEURON_RT_STOCHASTIC_ROUNDING_EN=1; train.py now has ..."), which is what a write run reports.
When nothing is written the same finding must say what *would* be done: :func:`would` rewrites
the message, and the text output marks it ``[fixable]`` instead of ``[fixed]`` (ruff marks the
findings it can fix in the same spirit). The rewrite is a short ordered list of phrase rules
over the fixed messages the tool emits; a message no rule recognises is prefixed
``would fix: `` so that a dry run never reads as if something had been changed.
"""

from __future__ import annotations

import re

# (pattern, replacement), applied in order, each at most where it matches. Names are \S+ words
# (a variable name, ``unset of X``); the rest of each message is kept as it is.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"^unset of (\S+) removed", r"would remove the unset of \1"),
        (r"^(\S+) replaced by (\S+?)([;:,]|$)", r"would replace \1 by \2\3"),
        (r"^(\S+) replaced: ", r"would replace \1: "),
        (r"^(\S+) removed([;:,]|$)", r"would remove \1\2"),
        (r"^(\S+) removed \(", r"would remove \1 ("),
        (r"\bnow (has|have)\b", r"would then have"),
        (r"([:;]) now ", r"\1 would become "),
        (r"^(\S+) is no longer set\b", r"\1 would no longer be set"),
        (r"\bis replaced by\b", r"would be replaced by"),
        (r"([:;,]) removed\b", r"\1 would be removed"),
        (r"(this script): (model (?:cast|kept))", r"\1: would change it: \2"),
    )
)


def would(message: str) -> str:
    """``message`` of a fixed finding reworded for a run that writes nothing: "would replace X
    by Y", "would remove X", "... would then have ...". Never returns a message without
    "would"."""
    out = message
    for pattern, replacement in _RULES:
        out = pattern.sub(replacement, out, count=1)
    if "would" not in out:
        out = f"would fix: {out}"
    return out


def silent_change(path: str, codes: list[str]) -> str:
    """The line that says why ``--check`` fails for a file no reported finding names: it would
    change, and ``codes`` (possibly none) are what is suppressed about it. A suppression hides a
    finding, never the change (the rewrite would still write the file); a ``# noqa`` on the
    file's legacy write keeps the file as it is."""
    hidden = f"its findings are suppressed ({', '.join(codes)})" if codes else "no finding names it"
    return (
        f"bf16-migrate: {path} would change; {hidden}: a suppression hides a finding, not the change "
        "(`# noqa` on the legacy write keeps a file as it is)"
    )
