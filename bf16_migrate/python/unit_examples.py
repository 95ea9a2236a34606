"""Examples a rule unit carries with it (:mod:`.meet`, :mod:`.deliberate_f32`, :mod:`.no_tensor`,
:mod:`.inline_code`): legacy scripts it must leave alone (VALID) and ones it must change, with the
text it writes (INVALID). ``tests/test_unit_examples.py`` migrates each one and holds the unit to
them; they are the unit's specification in code, next to it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Example", "HEADER", "TRAIN", "script"]

HEADER = 'import os\nimport math\n\nimport torch\nimport torch_xla\n\nos.environ["XLA_USE_BF16"] = "1"\n\n'
"""The top of every example script: the legacy switch, set the old way."""

TRAIN = "\n\nmodel = Net().to(torch_xla.device())\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
"""The bottom of a model example: the model on the device and its optimizer."""


def script(body: str, footer: str = TRAIN) -> str:
    """A whole legacy script: :data:`HEADER`, ``body`` (its model code), ``footer``."""
    return HEADER + body.strip("\n") + "\n" + footer


@dataclass(frozen=True)
class Example:
    """One example of a unit. ``source``: a legacy script. ``valid``: the unit changes nothing
    there. ``lines``: lines the migrated text must hold (for a VALID example, the lines it leaves as
    written; for an INVALID one, the lines it writes); ``gone``: lines it removes. ``codes``: the
    unit's findings, in order (fixed unless ``kept`` says the switch stays: then the file is left as
    it is)."""

    name: str
    source: str
    valid: bool
    lines: tuple[str, ...]
    codes: tuple[str, ...]
    kept: bool = False
    gone: tuple[str, ...] = ()
