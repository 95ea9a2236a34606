"""Golden files, one layout for every group: ``fixtures/<group>/<case>/expected/<mode>/`` holds
the files the migration changes (at their paths relative to the case) and, where the group
records them, ``diagnostics.txt``. A file the migration leaves alone has no golden.

``pytest --update-goldens`` writes what the code gives instead of comparing (the golden
directory is replaced, so a file the migration no longer changes disappears); then review
``git diff fixtures/`` line by line before committing. A golden is a claim about behaviour:
never regenerate one to make a failing test pass without knowing why it changed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

DIAGNOSTICS = "diagnostics.txt"


class Goldens:
    """Compares (or, with ``update``, writes) golden directories; ``updated`` lists those written."""

    def __init__(self, update: bool) -> None:
        self.update = update
        self.updated: list[Path] = []

    def check(self, expected: Path, files: dict[str, str | bytes], diagnostics: str | None = None) -> None:
        """Assert that ``expected`` holds exactly ``files`` (relative path -> text or bytes)
        and, when given, ``diagnostics`` as ``diagnostics.txt``."""
        if self.update:
            if expected.exists():
                shutil.rmtree(expected)
            expected.mkdir(parents=True)
            for rel, content in files.items():
                target = expected / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, bytes):
                    target.write_bytes(content)
                else:
                    target.write_text(content)
            if diagnostics is not None:
                (expected / DIAGNOSTICS).write_text(diagnostics)
            self.updated.append(expected)
            return
        assert expected.is_dir(), f"no golden directory {expected} (run pytest --update-goldens, then review git diff)"
        found: dict[str, str | bytes] = {}
        for path in sorted(
            p for p in expected.rglob("*") if p.is_file() and p.relative_to(expected).as_posix() != DIAGNOSTICS
        ):
            rel = path.relative_to(expected).as_posix()
            want = files.get(rel)
            found[rel] = path.read_bytes() if isinstance(want, bytes) else path.read_text()
        assert files == found
        if diagnostics is not None:
            assert diagnostics == (expected / DIAGNOSTICS).read_text()


def expected_dir(case_dir: Path, mode: str) -> Path:
    """``<case>/expected/<mode>/``."""
    return case_dir / "expected" / mode


def golden_pairs(fixtures: Path):
    """(input file, golden output file) for every golden of every group: a file
    ``<case>/expected/<mode>/<rel>`` is the migration of ``<case>/<rel>`` (or, for the project's
    cases, of ``fixtures/project/<rel>``)."""
    for out in sorted(fixtures.rglob("*")):
        parts = out.relative_to(fixtures).parts
        if not out.is_file() or "expected" not in parts or out.name == DIAGNOSTICS:
            continue
        k = parts.index("expected")
        rel = Path(*parts[k + 2 :])
        for base in (fixtures.joinpath(*parts[:k]), fixtures / "project"):
            if (base / rel).is_file():
                yield base / rel, out
                break
