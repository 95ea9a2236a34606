"""verify runs a script of a package that imports it (``python -m tinylm.train``) as a module: the
legacy run from the tree, the staged runs from a copy of the tree that holds the package, the
package's migrated modules in it (bf16_migrate.verify.package). Run by its path, such a script
cannot import its own package, and verify said the runs would fail (bench/unseen/hunt8 rope_pymodule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf16_migrate.verify.package import PackageRun, package_run, stage_package
from bf16_migrate.verify.preflight import check_arguments
from bf16_migrate.verify.runner import LEGACY_VARIABLES

MODEL = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.lin(x)
"""

TRAIN = """\
import argparse
import os

import torch
import torch_xla

from {import_line}

os.environ["XLA_USE_BF16"] = "1"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(args.steps):
        loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()


if __name__ == "__main__":
    main()
"""


def _tree(tmp_path: Path, import_line: str = "proj.core.model import Net") -> Path:
    pkg = tmp_path / "repo" / "proj" / "core"
    pkg.mkdir(parents=True)
    (tmp_path / "repo" / "proj" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(MODEL)
    (pkg / "train.py").write_text(TRAIN.replace("{import_line}", import_line))
    (tmp_path / "repo" / "data").mkdir()
    return pkg / "train.py"


@pytest.mark.parametrize("import_line", ["proj.core.model import Net", ".model import Net"])
def test_a_script_that_imports_its_package_runs_as_a_module_from_the_packages_top(tmp_path, import_line):
    script = _tree(tmp_path, import_line)
    assert package_run(script, script.read_text()) == PackageRun((tmp_path / "repo").resolve(), "proj.core.train")


def test_a_script_that_imports_its_siblings_by_name_runs_by_its_path(tmp_path):
    script = _tree(tmp_path, "model import Net")
    assert package_run(script, script.read_text()) is None
    plain = tmp_path / "plain.py"
    plain.write_text(TRAIN.replace("{import_line}", "proj.core.model import Net"))
    assert package_run(plain, plain.read_text()) is None  # not in a package


def test_the_staged_copy_holds_the_migrated_texts_and_copies_the_rest(tmp_path):
    """The rest of the tree is a working copy (bf16_migrate.verify.workcopy): real directories and copied files,
    so a run writes none of the user's files (they were symlinks: hunt9 G14)."""
    script = _tree(tmp_path)
    package = package_run(script, script.read_text())
    assert package is not None
    model = script.parent / "model.py"
    staged = stage_package("# migrated\n", script, package, tmp_path / "ws", {model: "# migrated model\n"})
    assert staged == tmp_path / "ws" / "proj" / "core" / "train.py"
    assert staged.read_text() == "# migrated\n" and not staged.is_symlink()
    assert (tmp_path / "ws" / "proj" / "core" / "model.py").read_text() == "# migrated model\n"
    for entry in (tmp_path / "ws" / "data", tmp_path / "ws" / "proj" / "__init__.py"):
        assert entry.exists() and not entry.is_symlink(), entry
    (tmp_path / "ws" / "data" / "out.npy").write_bytes(b"a run's output")
    (tmp_path / "ws" / "proj" / "__init__.py").write_text("# a run's write\n")
    assert not (tmp_path / "repo" / "data" / "out.npy").exists()
    assert (tmp_path / "repo" / "proj" / "__init__.py").read_text() == ""
    # nothing was written through a link into the tree
    assert script.read_text().startswith("import argparse") and model.read_text() == MODEL
    with pytest.raises(ValueError):
        stage_package("x", tmp_path / "elsewhere.py", package, tmp_path / "ws2")


def test_preflight_starts_a_package_script_as_a_module(tmp_path):
    """Its arguments are checked as `python -m proj.core.train` parses them; by its path the
    script fails on its own package's import."""
    pytest.importorskip("torch_xla")
    script = _tree(tmp_path)
    source = script.read_text()
    package = package_run(script, source)
    assert check_arguments(script, ["--steps", "2"], source, drop=LEGACY_VARIABLES, package=package)
    from bf16_migrate.verify.records import RunError

    with pytest.raises(RunError, match="No module named 'proj'"):
        check_arguments(script, ["--steps", "2"], source, drop=LEGACY_VARIABLES)


@pytest.mark.xla
def test_verify_proves_a_package_script_and_migrates_its_module(tmp_path):
    """The legacy run from the tree as `python -m`, the migrated one from the staged copy, whose
    model.py is the migrated one (the trace's files read as the user's)."""
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import PASS

    script = _tree(tmp_path)
    report = verify_script(script, "stochastic", steps=6, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.verdict.parts]
    assert report.runs["legacy"].device_param_dtypes == {"bf16": 2}
    assert report.runs["migrated"].param_dtypes == {"bfloat16": 2}
