"""`--helpers-module NAME`: the helper functions written once per directory as NAME.py and
imported by the migrated scripts there; a package directory, or a NAME.py that is not ours,
keeps the self-contained default (BFM065). Writing the module is part of the run's one change."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.commit import WriteRefused, commit, plan_new_file
from bf16_migrate.python.snippets import EMITTED_MARK, HELPER_SOURCES, helpers_module_source

from conftest import FIXTURES

RESUME = (FIXTURES / "resume_checkpoint" / "train.py").read_text()
MLP = (FIXTURES / "mlp_regression" / "train.py").read_text()
FOREIGN = "def with_fp32_master_weights(cls):\n    return cls  # the user's own module of that name\n"


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def tree(root: Path) -> dict[str, bytes]:
    (root / "jobs").mkdir()
    (root / "jobs" / "resume.py").write_text(RESUME)
    (root / "jobs" / "mlp.py").write_text(MLP)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "train.py").write_text(MLP)
    (root / "mine").mkdir()
    (root / "mine" / "train.py").write_text(MLP)
    (root / "mine" / "bf16_helpers.py").write_text(FOREIGN)
    return snapshot(root)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_one_module_per_directory_imported_by_its_scripts(tmp_path):
    before = tree(tmp_path)
    proc = cli(tmp_path, "--mode", "gpu-compatible", "--helpers-module", "bf16_helpers")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # only the docstrings' BFM091 are left
    module = tmp_path / "jobs" / "bf16_helpers.py"
    assert module.read_text() == helpers_module_source()
    compile(module.read_text(), str(module), "exec")
    assert "XLA_" not in module.read_text() and EMITTED_MARK in module.read_text()
    resume, mlp = (tmp_path / "jobs" / "resume.py").read_text(), (tmp_path / "jobs" / "mlp.py").read_text()
    # resume.py saves its checkpoint with xm.save: host_float32 keeps it float32 on disk
    assert "from bf16_helpers import with_fp32_master_weights, clip_grad_norm_fp32_, host_float32\n" in resume
    assert "from bf16_helpers import with_fp32_master_weights\n" in mlp
    for text in (resume, mlp):
        ast.parse(text)
        assert not any(f"def {name}(" in text for name in HELPER_SOURCES)  # no copy in the script
    # a package directory and a clashing file of that name: self-contained scripts, said once each
    for name in ("pkg/train.py", "mine/train.py"):
        text = (tmp_path / name).read_text()
        assert "def with_fp32_master_weights(" in text and "from bf16_helpers" not in text
    assert not (tmp_path / "pkg" / "bf16_helpers.py").exists()
    assert (tmp_path / "mine" / "bf16_helpers.py").read_text() == FOREIGN
    inline = [line for line in proc.stdout.splitlines() if "BFM065" in line]
    assert (
        len(inline) == 2
        and any("is a package" in line for line in inline)
        and any("not written by bf16-migrate" in line for line in inline)
    ), proc.stdout
    # a second run changes nothing, and --check finds nothing to change
    after = snapshot(tmp_path)
    assert after != before
    again = cli(tmp_path, "--mode", "gpu-compatible", "--helpers-module", "bf16_helpers")
    assert snapshot(tmp_path) == after, again.stdout
    assert "bf16-migrate: 0 file(s) changed, 0 finding(s) fixed" in again.stdout + again.stderr, (
        again.stdout + again.stderr
    )


def test_check_and_diff_write_nothing_and_name_the_module(tmp_path):
    before = tree(tmp_path)
    proc = cli(tmp_path, "--mode", "gpu-compatible", "--helpers-module", "bf16_helpers", "--diff", cwd=tmp_path)
    assert proc.returncode == 1
    assert snapshot(tmp_path) == before
    assert "--- /dev/null\n+++ b/jobs/bf16_helpers.py\n" in proc.stdout  # a file the change creates


def test_a_module_name_that_is_not_an_identifier_is_a_one_line_error(tmp_path):
    (tmp_path / "train.py").write_text(MLP)
    proc = cli(tmp_path, "--mode", "gpu-compatible", "--helpers-module", "bf16-helpers")
    assert proc.returncode == 2 and "--helpers-module 'bf16-helpers'" in proc.stderr
    assert (tmp_path / "train.py").read_text() == MLP


def test_configuration_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.bf16-migrate]\nmode = "gpu-compatible"\nhelpers-module = "precision_helpers"\n'
    )
    (tmp_path / "train.py").write_text(MLP)
    proc = cli(tmp_path / "train.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (tmp_path / "precision_helpers.py").exists()
    assert "from precision_helpers import with_fp32_master_weights\n" in (tmp_path / "train.py").read_text()


def test_new_file_never_replaces_one_that_appeared(tmp_path):
    target = tmp_path / "bf16_helpers.py"
    other = tmp_path / "train.py"
    other.write_text("x = 1\n")
    from bf16_migrate.commit import plan_write

    writes = [plan_new_file(target, "new = 1\n", 0), plan_write(other, "x = 2\n", "utf-8", [tmp_path], 0)]
    target.write_text("theirs = 1\n")  # appears between planning and committing
    report = commit(writes)
    assert target.read_text() == "theirs = 1\n"
    assert target in report.failed
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".bf16-migrate")]
    with pytest.raises(WriteRefused, match="already exists"):
        plan_new_file(target, "new = 1\n", 0)
    assert other.read_text() == "x = 1\n"  # the change is all or nothing


@pytest.mark.parametrize(
    "name, error", [("bf16-helpers", "not a plain Python module name"), ("json", "shadow"), ("torch", "shadow")]
)
def test_names_that_would_not_import_or_would_shadow_are_refused(tmp_path, name, error):
    (tmp_path / "train.py").write_text(MLP)
    proc = cli(tmp_path, "--mode", "gpu-compatible", "--helpers-module", name)
    assert proc.returncode == 2 and error in proc.stderr, proc.stderr
    assert (tmp_path / "train.py").read_text() == MLP and not (tmp_path / f"{name}.py").exists()


def test_a_script_that_already_imports_that_name_keeps_its_copy(tmp_path):
    (tmp_path / "train.py").write_text(MLP.replace("import argparse\n", "import argparse\nimport utils\n"))
    proc = cli(tmp_path, "--mode", "gpu-compatible", "--helpers-module", "utils")
    text = (tmp_path / "train.py").read_text()
    assert "def with_fp32_master_weights(" in text and not (tmp_path / "utils.py").exists()
    assert "already imports a module named utils" in proc.stdout


def test_migrate_source_imports_from_a_dotted_module():
    from bf16_migrate.python import migrate_source

    result = migrate_source(MLP, "gpu-compatible", "train.py", helpers_module="tools.precision")
    assert result.helpers == ["with_fp32_master_weights"]
    assert "from tools.precision import with_fp32_master_weights\n" in result.code
    with pytest.raises(ValueError):
        migrate_source(MLP, "gpu-compatible", "train.py", helpers_module="tools-precision")
