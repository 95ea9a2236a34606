"""Every class of bad input is that file's clear error (one line, the real line and column), the
other files are still migrated, nothing hangs, and nothing is skipped in silence.

The CLI runs in a subprocess with a timeout: a FIFO or ``/dev/zero`` that is opened would block
or never end, and a stack overflow would kill the process without a word.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.python import CodemodError, ParseError, migrate_source

GOOD = """import os
import torch

os.environ["XLA_USE_BF16"] = "1"
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    optimizer.step()
"""


def run(*args, cwd=None):
    # -P: the tree is the working directory, and its token.py must not shadow the standard library
    return subprocess.run(
        [sys.executable, "-P", "-m", "bf16_migrate.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "good.py").write_text(GOOD)
    return root


def assert_good_migrated(root: Path) -> None:
    text = (root / "good.py").read_text()
    assert "model.to(torch.bfloat16)" in text and "XLA_USE_BF16" not in text


# -- per-file isolation ---------------------------------------------------------------------------------
BAD_PYTHON = [
    # (name, source, the error line after "error: ")
    (
        "nested.py",
        "# XLA_USE_BF16\nx = " + "[" * 1000 + "]" * 1000 + "\n",
        "nested.py:2:205: not valid Python: too many nested parentheses",
    ),
    (
        "parens.py",
        "# XLA_USE_BF16\nx = " + "(" * 2000 + ")" * 2000 + "\n",
        "parens.py:2:205: not valid Python: too many nested parentheses",
    ),
    (
        "ident.py",
        "# XLA_USE_BF16\nimport os\nvalue\u20ac = 1\n",
        "ident.py:3:6: not valid Python: invalid character '€' (U+20AC)",
    ),
    (
        "py2.py",
        "import os\nos.environ['XLA_USE_BF16'] = '1'\n\nprint \"training\"\n",
        "py2.py:4:1: not valid Python: Missing parentheses in call to 'print'. Did you mean print(...)?",
    ),
    (
        "token.py",
        "import os\nos.environ['XLA_USE_BF16'] = '1'\nx = 'unterminated\n",
        "token.py:3:5: not valid Python: unterminated string literal (detected at line 3)",
    ),
    (
        "indent.py",
        "import os\nos.environ['XLA_USE_BF16'] = '1'\n  x = 1\n",
        "indent.py:3:2: not valid Python: unexpected indent",
    ),
]


def test_each_bad_python_file_is_its_own_error_and_the_rest_is_migrated(tree):
    for name, source, _ in BAD_PYTHON:
        (tree / name).write_text(source)
    before = {name: (tree / name).read_bytes() for name, _, _ in BAD_PYTHON}
    result = run(".", cwd=tree)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(errors(result)) == sorted(f"error: {line}" for _, _, line in BAD_PYTHON)
    assert_good_migrated(tree)
    assert {name: (tree / name).read_bytes() for name, _, _ in BAD_PYTHON} == before
    assert f"{len(BAD_PYTHON)} file(s) could not be processed" in result.stderr


def test_a_valid_400_term_chain_is_migrated():
    source = GOOD.replace("for step", "total = " + " + ".join(["step"] * 400) + "\nfor step")
    result = migrate_source(source, "stochastic", "chain.py")
    assert "model.to(torch.bfloat16)" in result.code
    compile(result.code, "chain.py", "exec")


def test_an_internal_error_is_that_files_error(monkeypatch):
    from bf16_migrate.python import precision

    def broken(self):
        raise KeyError("boom")

    monkeypatch.setattr(precision.Planner, "run", broken)
    with pytest.raises(CodemodError) as info:
        migrate_source(GOOD, "stochastic", "t.py")
    assert (
        str(info.value)
        == "t.py:1:1: cannot migrate: internal error (KeyError: 'boom'); this is a bf16-migrate bug, please report it"
    )
    assert isinstance(info.value, ParseError)  # every caller reports it as the file's error


# -- only regular files are read --------------------------------------------------------------------------
def test_a_fifo_in_the_tree_is_reported_never_opened(tree):
    os.mkfifo(tree / "x.py")
    os.mkfifo(tree / "run.sh")
    os.mkfifo(tree / "notes")  # no kind of ours by its name: not ours to report
    result = run(".", cwd=tree)
    assert result.returncode == 2
    assert errors(result) == [
        "error: run.sh: not a regular file (FIFO); not read",
        "error: x.py: not a regular file (FIFO); not read",
    ]
    assert_good_migrated(tree)


def test_a_symlink_to_dev_zero_is_reported_never_read(tree):
    (tree / "zero.py").symlink_to("/dev/zero")
    result = run(".", cwd=tree)
    assert result.returncode == 2
    assert errors(result) == ["error: zero.py: not a regular file (character device); not read"]
    assert_good_migrated(tree)


@pytest.mark.parametrize("special", ["/dev/null", "fifo.py"])
def test_a_special_file_named_on_the_command_line_is_an_error_not_silence(tree, special):
    if special == "fifo.py":
        os.mkfifo(tree / special)
    kind = "character device" if special == "/dev/null" else "FIFO"
    result = run(special, "good.py", cwd=tree)
    assert result.returncode == 2
    assert errors(result) == [f"error: {special}: not a regular file ({kind}); not read"]
    assert_good_migrated(tree)


def test_a_symlink_loop_is_named_as_such(tree):
    (tree / "a.py").symlink_to(tree / "b.py")
    (tree / "b.py").symlink_to(tree / "a.py")
    result = run("a.py", cwd=tree)
    assert result.returncode == 2
    assert errors(result) == ["error: a.py: symlink loop"]
    result = run(".", cwd=tree)
    assert sorted(errors(result)) == ["error: a.py: symlink loop", "error: b.py: symlink loop"]
    assert_good_migrated(tree)


# -- links --------------------------------------------------------------------------------------------------
def test_a_symlink_inside_the_paths_is_written_through(tree):
    (tree / "src").mkdir()
    (tree / "good.py").rename(tree / "src" / "train.py")
    (tree / "train.py").symlink_to(Path("src") / "train.py")
    result = run("train.py", "src", cwd=tree)
    assert result.returncode == 0, result.stderr
    assert (tree / "train.py").is_symlink()  # the link is kept, its target migrated, once
    assert "model.to(torch.bfloat16)" in (tree / "src" / "train.py").read_text()
    assert result.stderr.count("[fixed]") == 0 and "1 file(s) changed" in result.stderr


def test_a_symlink_out_of_the_paths_is_refused_and_nothing_is_written(tmp_path, tree):
    outside = tmp_path / "elsewhere.py"
    outside.write_text(GOOD)
    (tree / "linked.py").symlink_to(outside)
    result = run(".", cwd=tree)
    assert result.returncode == 2
    assert (
        errors(result)[0] == f"error: linked.py: not written: it is a symlink to {outside}, outside the paths "
        f"given; migrate {outside} itself (name it on the command line)"
    )
    assert errors(result)[1].startswith(
        "error: not written, so that no launcher is migrated without its script: good.py (nothing was written)"
    )
    assert outside.read_text() == GOOD and (tree / "good.py").read_text() == GOOD


def test_a_hard_link_keeps_its_inode(tmp_path, tree):
    other = tmp_path / "other_name.py"
    os.link(tree / "good.py", other)
    inode = (tree / "good.py").stat().st_ino
    result = run(".", cwd=tree)
    assert result.returncode == 0, result.stderr
    assert (tree / "good.py").stat().st_ino == inode and (tree / "good.py").stat().st_nlink == 2
    assert_good_migrated(tree)
    assert other.read_text() == (tree / "good.py").read_text()


# -- undecodable files that name a variable are errors, not silence --------------------------------------------
@pytest.mark.parametrize(
    "name, data, line",
    [
        (
            "utf16.py",
            "\ufeffimport os\nos.environ['XLA_USE_BF16'] = '1'\n".encode("utf-16"),
            "utf16.py:1:1: cannot decode: UTF-16/UTF-32 (byte-order mark); "
            "Python reads source as UTF-8 or a PEP 263 coding",
        ),
        (
            "nul.py",
            b"import os\nos.environ['XLA_USE_BF16'] = '1'\nx = 1\0\n",
            "nul.py:3:6: cannot decode: NUL byte (a binary or UTF-16 file?)",
        ),
        (
            "latin.py",
            b"import os\nos.environ['XLA_USE_BF16'] = '1'\nname = '\xe9'\n",
            "latin.py:3:9: cannot decode as utf-8: invalid continuation byte (byte 0xe9)",
        ),
        (
            "run.sh",
            "export XLA_USE_BF16=1\n".encode("utf-16-le"),
            "run.sh:1:2: cannot decode: NUL byte (a binary or UTF-16 file?)",
        ),
    ],
)
def test_an_undecodable_file_naming_a_variable_is_an_error(tree, name, data, line):
    (tree / name).write_bytes(data)
    result = run(".", cwd=tree)
    assert result.returncode == 2
    assert errors(result) == [f"error: {line}"]
    assert (tree / name).read_bytes() == data
    assert_good_migrated(tree)


def test_binary_junk_naming_a_variable_is_reported(tree):
    (tree / "blob.bin").write_bytes(b"\x7fELF\0\0\x01" + b"XLA_USE_BF16\0" + bytes(range(256)))
    result = run("blob.bin", "--check", cwd=tree)
    assert result.returncode == 1
    assert (
        "blob.bin:1:8: BFM090 XLA_USE_BF16 is named in a binary file (`.bin`) bf16-migrate cannot "
        "rewrite: rebuild it from migrated sources, or --exclude it if it is data" in result.stdout
    )


# -- carriers: one file's failure is its own -----------------------------------------------------------------
def test_a_notebook_cell_without_a_type_is_that_files_error(tree):
    (tree / "probe.ipynb").write_text(
        '{"cells": [{"source": "import os\\nos.environ[\\"XLA_USE_BF16\\"] = \\"1\\"", '
        '"metadata": {}}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )
    result = run(".", cwd=tree)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert errors(result) == ["error: probe.ipynb:1:1: not a readable notebook: cell 1 has no `cell_type`"]
    assert_good_migrated(tree)


def test_an_internal_error_in_a_carrier_is_that_files_error(tree, monkeypatch):
    from bf16_migrate import carriers
    from bf16_migrate.carriers import CarrierError

    def broken(kind, text, path):
        raise IndexError("boom")

    monkeypatch.setattr(carriers, "_analyze", broken)
    with pytest.raises(CarrierError) as info:
        carriers.analyze("shell", "export XLA_USE_BF16=1\n", "run.sh")
    assert (
        str(info.value)
        == "run.sh:1:1: cannot migrate: internal error (IndexError: boom); this is a bf16-migrate bug, please report it"
    )
