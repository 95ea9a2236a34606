"""The faults of the fourth attack round (settings in places people put them, encodings,
permissions, nesting, special files), each a regression test: every one of them failed before its
fix, silently (exit 0, "0 left to do" on a file that sets the variable) or with a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()
"""A training script of our own that never names a variable: the launchers set it."""
CAST = "model.to(torch.bfloat16)"


def codes(outcome, name: str | None = None) -> list[str]:
    return [d.code for d in outcome.diagnostics if name is None or Path(d.path).name == name]


# -- hidden directories ------------------------------------------------------------------------------------------------
def test_a_launcher_in_a_hidden_directory_is_migrated_with_its_script(tmp_path):
    """`.ci/run.sh` was passed over (only CI directories such as `.github` were walked)."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py --steps 5\n")
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert outcome.errors == []
    assert (tmp_path / ".ci" / "run.sh").read_text() == (
        "#!/bin/bash\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=1\npython train.py --steps 5\n"
    )
    assert CAST in (tmp_path / "train.py").read_text()


def test_tool_managed_hidden_directories_are_still_passed_over(tmp_path):
    """Version control's data, environments and caches are not the project's files."""
    for name in (".git", ".tox", ".venv", ".mypy_cache", ".ipynb_checkpoints"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    (tmp_path / ".idea").mkdir()
    (tmp_path / ".idea" / "workspace.xml").write_text('<env name="XLA_USE_BF16" value="1" />\n')
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert [(Path(d.path).relative_to(tmp_path).as_posix(), d.code) for d in outcome.diagnostics] == [
        (".idea/workspace.xml", "BFM090")
    ]


# -- tracebacks that became one-line errors ----------------------------------------------------------------------------
def cli(*args, cwd: Path | None = None, drop_root: bool = False) -> subprocess.CompletedProcess:
    """The command line in a child process; ``drop_root``: without the capabilities that let
    root ignore permission bits (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so a directory without
    its execute bit is one for it too (setpriv(1)); skipped where that cannot be had."""
    command = [sys.executable, "-m", "bf16_migrate.cli", *map(str, args)]
    if drop_root and os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root, and no setpriv(1) to drop the capabilities that ignore permission bits")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


@pytest.mark.parametrize("nested", ["[" * 3000 + "]" * 3000, "{a=" * 3000 + "1" + "}" * 3000])
def test_a_pyproject_nested_deeper_than_the_parser_recurses_is_a_one_line_error(tmp_path, nested):
    """tomllib recursed until a RecursionError, printed as a traceback."""
    (tmp_path / "pyproject.toml").write_text(f"[tool.bf16-migrate]\nx = {nested}\n")
    (tmp_path / "train.py").write_text(TRAIN)
    result = cli(".", "--check", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {tmp_path / 'pyproject.toml'}: cannot be read as TOML: arrays or tables nested too deeply to parse"
    )


@pytest.fixture
def locked_tree(tmp_path):
    """A launcher under a directory that has lost its execute bit (it can be listed, not entered)."""
    tree = tmp_path / "tree"
    (tree / "locked" / "sub").mkdir(parents=True)
    (tree / "train.py").write_text(TRAIN)
    (tree / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    (tree / "locked" / "sub" / "job.sh").write_text("export XLA_USE_BF16=1\npython ../../train.py\n")
    (tree / "locked").chmod(0o644)
    yield tree
    (tree / "locked").chmod(0o755)


def test_a_directory_that_cannot_be_entered_is_reported_not_passed_over(locked_tree):
    """Its files were passed over in silence (as os.walk does)."""
    result = cli(locked_tree, "--diff", drop_root=True)
    assert result.returncode == 2, result.stderr
    sub = locked_tree / "locked" / "sub"
    assert f"error: {sub}: directory not read (Permission denied): the files under it were not looked at" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["locked/sub/job.sh", "locked/sub", "locked"])
def test_a_path_under_a_directory_that_cannot_be_entered_is_a_one_line_error(locked_tree, name):
    """`pathlib.Path.is_dir()` raised PermissionError: a traceback."""
    result = cli(locked_tree / name, "--diff", drop_root=True)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "Permission denied" in result.stderr.splitlines()[0]


# -- encodings ---------------------------------------------------------------------------------------------------------
LATIN1 = {
    "run.sh": (
        b"#!/bin/bash\n# Caf\xe9 \xe0 la r\xe9gie\nexport XLA_USE_BF16=1  # d\xe9faut\npython train.py\n",
        b"#!/bin/bash\n# Caf\xe9 \xe0 la r\xe9gie\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=1  # d\xe9faut\n"
        b"python train.py\n",
    ),
    "Dockerfile": (
        b'FROM python:3.11\n# Caf\xe9\nENV XLA_USE_BF16=1\nCMD ["python", "train.py"]\n',
        b'FROM python:3.11\n# Caf\xe9\nENV NEURON_RT_STOCHASTIC_ROUNDING_EN=1\nCMD ["python", "train.py"]\n',
    ),
    "bf16.env": (b"# Caf\xe9\nXLA_USE_BF16=1\n", b"# Caf\xe9\nNEURON_RT_STOCHASTIC_ROUNDING_EN=1\n"),
}


@pytest.mark.parametrize("name", sorted(LATIN1))
def test_a_carrier_with_latin1_bytes_is_migrated_and_written_back_byte_for_byte(tmp_path, name):
    """ "invalid or missing encoding declaration": carriers were decoded as Python source."""
    (tmp_path / "train.py").write_text(TRAIN)
    before, after = LATIN1[name]
    (tmp_path / name).write_bytes(before)
    if name == "bf16.env":
        (tmp_path / "run.sh").write_text("set -a\nsource bf16.env\nset +a\npython train.py\n")
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert outcome.errors == []
    assert (tmp_path / name).read_bytes() == after
    assert CAST in (tmp_path / "train.py").read_text()
    again = migrate_paths([tmp_path], "stochastic", write=True)
    assert again.errors == [] and again.changed == []


def test_a_yaml_file_with_latin1_bytes_is_reported_not_rewritten(tmp_path):
    """bash and docker read their files as bytes, a YAML loader does not: a YAML stream is Unicode
    (YAML 1.2, 5.2), and ruamel.yaml and PyYAML refuse a byte that is not UTF-8 ("unacceptable
    character #x00e9"), so whatever reads the migrated file would refuse it too. Found by the
    junk-tree test (a file rewritten that no YAML loader reads). A one-line error names the byte's
    place; the file is left as it is."""
    (tmp_path / "train.py").write_text(TRAIN)
    before = (
        b'services:\n  train:\n    # Caf\xe9\n    environment:\n      XLA_USE_BF16: "1"\n    command: python train.py\n'
    )
    (tmp_path / "compose.yaml").write_bytes(before)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert (tmp_path / "compose.yaml").read_bytes() == before
    assert [e.splitlines()[0] for e in outcome.errors] == [
        f"{tmp_path / 'compose.yaml'}:3:10: not valid YAML: a byte that is not UTF-8 (YAML streams are Unicode)"
    ]


@pytest.mark.parametrize("name", ["run.sh", "Dockerfile"])
def test_a_latin1_byte_in_a_shell_word_does_not_crash_the_parser(tmp_path, name):
    """tree-sitter-bash 0.25.1 crashed (a segmentation fault: the process died, exit -11) on a
    character of Unicode's planes 12-16 after `{`, which is where a byte that is not UTF-8 goes when
    a carrier is read as bytes (found by the junk-tree test: a shell script of random bytes)."""
    (tmp_path / "train.py").write_text(TRAIN)
    shell = b"export XLA_USE_BF16=1\necho {\xe9t\xe9} {\xf4\xfe\nyes {\xe0\n"
    text = shell + b"python train.py\n" if name == "run.sh" else b"FROM python:3.11\nENV XLA_USE_BF16=1 A={\xe9\n"
    (tmp_path / name).write_bytes(text)
    for _ in range(3):  # the crash did not come every time: it read past a buffer
        run = cli(tmp_path, "--check", cwd=tmp_path)
        assert run.returncode in (0, 1), run.stderr
        assert "XLA_USE_BF16" in run.stdout + run.stderr


def test_the_diff_of_a_latin1_carrier_holds_its_own_bytes(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "run.sh").write_bytes(LATIN1["run.sh"][0])
    outcome = migrate_paths([tmp_path], "amp", write=False)
    patch = outcome.diffs[tmp_path / "run.sh"]
    assert b"-export XLA_USE_BF16=1  # d\xe9faut\n" in patch and b" # Caf\xe9 \xe0 la r\xe9gie\n" in patch


def test_utf8_text_that_holds_the_escape_characters_and_bad_bytes_is_refused(tmp_path):
    """The one text the bytes' reading could not tell apart: refused with the reason, never guessed."""
    (tmp_path / "run.sh").write_bytes("# \U0010fee9 \n".encode() + b"# \xe9\nexport XLA_USE_BF16=1\npython t.py\n")
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert outcome.errors == [
        f"{tmp_path / 'run.sh'}:1:1: cannot decode: it holds characters U+10FE80..U+10FEFF, which this reading uses "
        "for undecodable bytes"
    ]


# -- a script whose own imports cannot be read -------------------------------------------------------------------------
MODEL = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x)
"""
SCRIPT = """\
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch_xla

from model import Net


def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(8, 16).to(device)).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


def _unreadable_module(where: Path, how: str) -> None:
    if how == "fifo":
        os.mkfifo(where)
    elif how == "dangling":
        os.symlink(where.parent / "gone" / "model.py", where)
    else:
        where.write_text(MODEL)
        where.chmod(0)


@pytest.mark.parametrize("how", ["fifo", "dangling"])
@pytest.mark.parametrize("launched", [False, True])
def test_a_script_whose_model_module_cannot_be_read_keeps_its_switch(tmp_path, how, launched):
    """The script was migrated anyway (the module's error reported beside it): the switch gone
    while the module's code, which ran under it, could not be read."""
    script = SCRIPT.replace('os.environ["XLA_USE_BF16"] = "1"\n', "") if launched else SCRIPT
    (tmp_path / "train.py").write_text(script)
    if launched:
        (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    _unreadable_module(tmp_path / "model.py", how)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "model.py"}
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert outcome.changed == []
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "model.py"} == before
    assert "BFM113" in codes(outcome, "train.py")
    if launched:
        assert codes(outcome, "run.sh") == ["BFM112"]
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith(f"{tmp_path / 'model.py'}: ")


def test_a_script_whose_model_module_has_no_read_permission_keeps_its_switch(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    _unreadable_module(tmp_path / "model.py", "unreadable")
    result = cli(tmp_path, "--diff", drop_root=True)
    assert "+++" not in result.stdout, result.stdout
    assert "BFM113 XLA_USE_BF16 kept: this script imports model" in result.stderr
    assert "(Permission denied)" in result.stderr


def test_a_readable_model_module_still_migrates_with_the_script(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "model.py").write_text(MODEL)
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert outcome.errors == [] and tmp_path / "train.py" in outcome.changed
