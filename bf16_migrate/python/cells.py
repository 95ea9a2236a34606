"""How a notebook's code cells reach the codemod: the notebook carrier
(:mod:`bf16_migrate.carriers.notebook`) joins them into one module, each cell opened by a marker
line, and the codemod's findings name a cell and a line in it by those markers."""

from __future__ import annotations

import re

CELL_MARKER = "__bf16_migrate_cell_{}__"
"""The line that opens code cell ``N`` (0-based) in the joined module."""

CELL_MARKER_RE = re.compile(r"^__bf16_migrate_cell_(\d+)__$")
"""A marker line; group 1 is the cell's 0-based number."""


def cell_of(code: str, line: int) -> tuple[int, int] | None:
    """``(cell, line in the cell)``, both 1-based, of ``line`` of the joined module ``code``; None
    when ``code`` has no marker above that line (not a notebook's cells)."""
    if CELL_MARKER.split("{")[0] not in code:
        return None
    lines = code.split("\n")
    for number in range(min(line, len(lines)), 0, -1):
        marker = CELL_MARKER_RE.match(lines[number - 1])
        if marker:
            return int(marker.group(1)) + 1, line - number
    return None
