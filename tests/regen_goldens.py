"""Regenerate golden files after a reviewed, intended change of the codemod's output.

Not a test (pytest does not collect it): run `python tests/regen_goldens.py [GROUP...]` with
GROUP among fixtures, shapes, real_shapes, project, carriers (default: all), then review
`git diff fixtures/` line by line before committing. A golden is a claim about behaviour;
never regenerate one to make a failing test pass without knowing why it changed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import FIXTURES, MODES  # noqa: E402

from bf16_migrate.python import migrate_source  # noqa: E402


def fixtures() -> None:
    for train in sorted(FIXTURES.glob("*/train.py")):
        for mode in MODES:
            out = migrate_source(train.read_text(), mode, f"{train.parent.name}/train.py")
            (train.parent / "expected" / f"{mode}.py").write_text(out.code)


def shapes() -> None:
    shapes_dir = FIXTURES / "shapes"
    for src in sorted(shapes_dir.glob("*.py")):
        for mode in MODES:
            out = migrate_source(src.read_text(), mode, src.name)
            (shapes_dir / "expected" / f"{src.stem}.{mode}.py").write_text(out.code)
            (shapes_dir / "expected" / f"{src.stem}.{mode}.txt").write_text("".join(d.format_text() + "\n" for d in out.diagnostics))


def real_shapes() -> None:
    from test_real_shapes import CASES, expected_dir, migrate_case

    for case in CASES:
        for mode in MODES:
            changed, diagnostics = migrate_case(case, mode)
            target = expected_dir(case, mode)
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            for rel, text in changed.items():
                (target / rel).write_text(text)
            (target / "diagnostics.txt").write_text("".join(line + "\n" for line in diagnostics))


def project() -> None:
    project_dir = FIXTURES / "project"
    for mode in MODES:
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "project"
            shutil.copytree(project_dir, tree, ignore=shutil.ignore_patterns("expected"))
            result = subprocess.run([sys.executable, "-m", "bf16_migrate.cli", "project", "--mode", mode], cwd=tmp, capture_output=True, text=True)
            expected = project_dir / "expected" / mode
            (expected / "diagnostics.txt").write_text(result.stdout)
            for path in sorted(p for p in tree.rglob("*") if p.is_file()):
                rel = path.relative_to(tree)
                original = project_dir / rel
                if original.read_bytes() != path.read_bytes():
                    (expected / rel).parent.mkdir(parents=True, exist_ok=True)
                    (expected / rel).write_bytes(path.read_bytes())


def carriers() -> None:
    from test_carriers_cases import CASES, MODES as CARRIER_MODES, run_case

    for case in CASES:
        for mode in CARRIER_MODES:
            with tempfile.TemporaryDirectory() as tmp:
                changed, diagnostics, _ = run_case(case, mode, Path(tmp))
            expected = FIXTURES / "carriers" / case / "expected" / mode
            for rel, text in changed.items():
                (expected / rel).parent.mkdir(parents=True, exist_ok=True)
                (expected / rel).write_text(text)
            (expected / "diagnostics.txt").write_text("".join(line + "\n" for line in diagnostics))


GROUPS = {"fixtures": fixtures, "shapes": shapes, "real_shapes": real_shapes, "project": project, "carriers": carriers}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(GROUPS):
        GROUPS[name]()
        print(f"regenerated {name}")
