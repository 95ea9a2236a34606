"""Shared test helpers: where the fixtures live, the migration modes and the legacy variables (both
from the rules)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bf16_migrate import rules

if TYPE_CHECKING:  # the verify package is loaded by the tests that judge, not by every test
    from bf16_migrate.verify.compare import Verdict
    from bf16_migrate.verify.parts import Part

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MODES = rules.MODES
"""The migration modes (``rules/modes.toml``)."""
LEGACY = rules.variable_names()
"""The legacy variables (``rules/XLA_*.toml``)."""
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "train.py").is_file())


def part_of(verdict: Verdict, name: str) -> Part:
    """The part ``name`` of a verify ``verdict`` (:meth:`Verdict.part`); the test fails, naming
    the parts there are, when it has none."""
    found = verdict.part(name)
    assert found is not None, f"no {name!r} part among {[p.name for p in verdict.parts]}"
    return found


@pytest.fixture
def fixture_copy(tmp_path):
    """Copy one fixture's train.py into a temporary directory and return its path."""

    def make(case: str) -> Path:
        target = tmp_path / case
        target.mkdir()
        (target / "train.py").write_bytes((FIXTURES / case / "train.py").read_bytes())
        return target / "train.py"

    return make


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="write the golden files under fixtures/*/expected/<mode>/ from what the code "
        "gives, instead of comparing (review git diff fixtures/ after)",
    )


@pytest.fixture(scope="session")
def goldens(request):
    """The session's :class:`goldens.Goldens` (``--update-goldens``: write instead of compare)."""
    from goldens import Goldens

    found = Goldens(request.config.getoption("--update-goldens"))
    yield found
    if found.updated:
        request.config._bf16_goldens_updated = list(found.updated)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n 2 --dist loadgroup``, the README's test command) the end-to-end
    XLA tests form one group, run one after another on one worker: each verify already runs two
    XLA processes side by side, and the machine's two cores hold no more (a third process only
    slows all of them). The other worker takes the rest of the suite meanwhile."""
    for item in items:
        if item.get_closest_marker("xla") is not None:
            item.add_marker(pytest.mark.xdist_group("xla"))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    updated = getattr(config, "_bf16_goldens_updated", [])
    if updated:
        terminalreporter.write_line(
            f"--update-goldens: wrote {len(updated)} golden director(ies); "
            "review `git diff fixtures/` before committing"
        )
