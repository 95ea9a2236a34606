"""Shared test helpers: where the fixtures live, and the migration modes."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MODES = ("stochastic", "gpu-compatible", "amp")
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "train.py").is_file())


@pytest.fixture
def fixture_copy(tmp_path):
    """Copy one fixture's train.py into a temporary directory and return its path."""

    def make(case: str) -> Path:
        target = tmp_path / case
        target.mkdir()
        (target / "train.py").write_bytes((FIXTURES / case / "train.py").read_bytes())
        return target / "train.py"

    return make
