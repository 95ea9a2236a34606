"""bf16-migrate is never silent about a file that names a legacy variable: documentation
(BFM091), files of a kind it does not rewrite (BFM090, every mention), and in Python and notebook
code the strings the codemod does not rewrite: shell commands (BFM133), docstrings and help texts
(BFM091), any other string (BFM131). Comments are not reported (a file naming a variable only in
comments is named by the summary, BFM094 when it holds a byte that is not UTF-8:
tests/test_undecodable_carriers.py). Nothing of it is rewritten, and ``--check`` fails on it.
Golden files of the Python shapes: fixtures/shapes/string_mentions/ (tests/test_shapes.py)."""

from __future__ import annotations

import json

import nbformat
import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.prefilter import mentions_legacy as _mentions_legacy
from bf16_migrate.python import migrate_source
from bf16_migrate.scan import scan

LIBSONNET = """\
local base = import 'base.libsonnet';
{
  env: {
    XLA_USE_BF16: '1',
    NEURON_CC_FLAGS: '--model-type=transformer',
    XLA_DOWNCAST_BF16: '1',
  },
}
"""
README = """\
# Training

Switch bf16 on before the run:

    export XLA_USE_BF16=1   # or XLA_DOWNCAST_BF16=1

The variable MY_XLA_USE_BF16_CACHE is another one.
"""
SETTINGS_JSON = '{"env": {"XLA_USE_BF16": "1"}, "args": ["--bf16"]}\n'
LAUNCHER = """\
import subprocess
opts = "MALLOC_ARENA_MAX=64 XLA_USE_BF16=1"
subprocess.check_call(f"{opts} torchrun --nproc_per_node=2 train.py", shell=True)
# XLA_USE_BF16 is deprecated
"""
CELL_OPTIONS = 'import subprocess\nenv_var_options = "MALLOC_ARENA_MAX=64 XLA_USE_BF16=1 NEURON_RT_NUM_CORES=2"'
CELL_RUN = 'subprocess.check_call(f"{env_var_options} torchrun --nproc_per_node=2 train.py", shell=True)'


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def findings(result) -> list[tuple[str, str, int, int]]:
    """(code, path relative to the tree's parent, line, col) of each diagnostic, from --format json."""
    return [(d["code"], d["path"], d["line"], d["col"]) for d in json.loads(result.stdout)["diagnostics"]]


def notebook() -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Quick run\n\nThe cell below sets `XLA_USE_BF16=1` for torchrun."),
        nbformat.v4.new_code_cell(CELL_OPTIONS),
        nbformat.v4.new_code_cell(CELL_RUN),
    ]
    return nbformat.writes(nb)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "job"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "train.libsonnet").write_text(LIBSONNET)
    (root / "README.md").write_text(README)
    (root / "configs" / "settings.json").write_text(SETTINGS_JSON)
    (root / "launch.py").write_text(LAUNCHER)
    (root / "quick_run.ipynb").write_text(notebook())
    return root


def snapshot(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_mention_gets_its_finding_and_nothing_is_written(tree, monkeypatch):
    monkeypatch.chdir(tree.parent)
    before = snapshot(tree)
    result = invoke("job", "--check", "--format", "json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["errors"] == []
    assert sorted(findings(result)) == sorted(
        [
            ("BFM091", "job/README.md", 5, 12),  # one per line: XLA_DOWNCAST_BF16 on the same line
            ("BFM090", "job/configs/settings.json", 1, 11),
            ("BFM090", "job/configs/train.libsonnet", 4, 5),  # every mention
            ("BFM090", "job/configs/train.libsonnet", 6, 5),
            ("BFM133", "job/launch.py", 2, 29),  # not the comment of line 4
            ("BFM091", "job/quick_run.ipynb#cell1", 3, 22),
            ("BFM133", "job/quick_run.ipynb#cell2", 2, 40),
        ]
    )
    assert snapshot(tree) == before
    # and the same without --check: findings are never fixed, so the exit is 1 and nothing is written
    assert invoke("job").exit_code == 1
    assert snapshot(tree) == before


def test_messages_name_the_variable_the_command_and_the_launched_script(tree, monkeypatch):
    monkeypatch.chdir(tree.parent)
    messages = {
        (d["path"], d["line"]): d["message"]
        for d in json.loads(invoke("job", "--check", "--format", "json").stdout)["diagnostics"]
    }
    assert messages[("job/launch.py", 2)] == (
        "XLA_USE_BF16=1 is set in a Python string run as a shell command (line 3: "
        "`MALLOC_ARENA_MAX=64 XLA_USE_BF16=1 torchrun --nproc_per_node...`): remove it from the "
        "string and migrate the script the command launches (`train.py`)"
    )
    # in a notebook, the command's line is the cell's (the diagnostic's own line is mapped by the carrier)
    notebook_message = messages[("job/quick_run.ipynb#cell2", 2)]
    assert "(cell3 line 1: `MALLOC_ARENA_MAX=64 XLA_USE_BF16=1 NEURON_RT_NUM_CORES=2 tor...`)" in notebook_message
    assert notebook_message.endswith("(`train.py`)")
    assert messages[("job/README.md", 5)] == (
        "documentation names XLA_USE_BF16 and XLA_DOWNCAST_BF16: update the text by hand "
        "(the variable is deprecated; see the migration guide)"
    )
    assert messages[("job/configs/train.libsonnet", 6)].startswith(
        "XLA_DOWNCAST_BF16 is named in a kind of file bf16-migrate does not rewrite (`.libsonnet`)"
    )


def test_exclude_silences_them(tree, monkeypatch):
    monkeypatch.chdir(tree.parent)
    result = invoke(
        "job",
        "--check",
        "--format",
        "json",
        "--exclude",
        "*.md",
        "--exclude",
        "configs/*",
        "--exclude",
        "*.ipynb",
        "--exclude",
        "launch.py",
    )
    assert result.exit_code == 0, result.output
    assert findings(result) == []


def test_a_clean_directory_still_exits_0(tmp_path):
    (tmp_path / "README.md").write_text("# Training\n\nbf16 is set in code: `model.to(torch.bfloat16)`.\n")
    (tmp_path / "train.py").write_text('"""Train in bf16."""\nimport torch\n# we used XLA_USE_BF16 once\n')
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "notes.txt").write_text("XLA_USE_BF16=1\n")  # hidden directory: skipped
    (tmp_path / "pkg.egg-info").mkdir()
    (tmp_path / "pkg.egg-info" / "PKG-INFO").write_text("XLA_USE_BF16=1\n")  # packaging metadata: skipped
    result = invoke(tmp_path, "--check")
    assert result.exit_code == 0, result.output
    assert "BFM" not in result.output
    # named all the same: the comment is the file's only mention, and there is nothing to change
    assert "; 1 only in comments, nothing to change: " in result.output and "train.py:3)" in result.output


def test_kinds_of_files_found_in_a_walk(tmp_path):
    files = {
        "guide.rst": "XLA_USE_BF16",
        "index.html": "XLA_USE_BF16",
        "doc.adoc": "XLA_USE_BF16",
        "page.mdx": "XLA_USE_BF16",
        "CHANGELOG": "XLA_USE_BF16",
        "job.jsonnet": "XLA_USE_BF16",
        "tpu.cfg": "XLA_USE_BF16",
        "run.log": "XLA_USE_BF16",
        "plain.md": "nothing here",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert {c.path.name: c.kind for c in scan([tmp_path])} == {
        "guide.rst": "docs",
        "index.html": "docs",
        "doc.adoc": "docs",
        "page.mdx": "docs",
        "CHANGELOG": "docs",
        "job.jsonnet": "unsupported",
        "tpu.cfg": "unsupported",
        "run.log": "unsupported",
    }


def test_the_prefilter_reads_large_files_in_chunks(tmp_path):
    """A name across the boundary of two chunks is found; a NUL in the head makes a file binary,
    searched in its first 16 MiB only."""
    path = tmp_path / "big.dat"
    path.write_bytes(b"x" * (8192 + (1 << 20) - 5) + b"XLA_USE_BF16=1\n")
    assert _mentions_legacy(path)
    path.write_bytes(b"x" * (3 << 20))
    assert not _mentions_legacy(path)
    # a binary file (a NUL in its head) naming a variable is found (then reported, never read
    # as source), in ASCII or UTF-16; past its first 16 MiB it is not read
    path.write_bytes(b"\0" + b"x" * 10 + b"XLA_USE_BF16")
    assert _mentions_legacy(path)
    path.write_bytes(b"\0" + "x XLA_DOWNCAST_BF16".encode("utf-16-le"))
    assert _mentions_legacy(path)
    path.write_bytes(b"\0" + b"x" * (17 << 20) + b"XLA_USE_BF16")
    assert not _mentions_legacy(path)


def test_an_undecodable_text_file_is_reported_not_an_error(tmp_path):
    (tmp_path / "notes.txt").write_bytes("caf\u00e9: XLA_USE_BF16=1\n".encode("latin-1"))
    result = invoke(tmp_path, "--check", "--format", "json")
    assert json.loads(result.stdout)["errors"] == []
    assert [(d["code"], d["line"], d["col"]) for d in json.loads(result.stdout)["diagnostics"]] == [("BFM091", 1, 7)]


# -- Python strings ------------------------------------------------------------------------------


def diagnosed(source: str, path: str = "launch.py", mode: str = "stochastic") -> list[tuple[str, int, int]]:
    result = migrate_source(source, mode, path)
    assert result.code == source or "os.environ" in source
    return [(d.code, d.line, d.col) for d in result.diagnostics]


def test_the_launcher_example():
    assert diagnosed(LAUNCHER) == [("BFM133", 2, 29)]


def test_a_write_the_codemod_handles_is_not_reported_twice():
    source = 'import os\nos.environ["XLA_USE_BF16"] = "1"\nos.system("export XLA_DOWNCAST_BF16=1")\n'
    assert [code for code, _, _ in diagnosed(source)] == ["BFM010", "BFM045"]


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            '"""Set XLA_USE_BF16=1 to train in bf16.\n\nXLA_DOWNCAST_BF16 and XLA_USE_BF16 both work.\n"""\n',
            [("BFM091", 1, 8), ("BFM091", 3, 1)],
        ),
        ('def f():\n    """Reads XLA_USE_BF16."""\n', [("BFM091", 2, 14)]),
        (
            'import argparse\np = argparse.ArgumentParser()\np.add_argument("--bf16", help="like " "XLA_USE_BF16=1")\n',
            [("BFM091", 3, 40)],
        ),
        (
            'import argparse\np = argparse.ArgumentParser(description=f"sets XLA_USE_BF16 for {__name__}")\n',
            [("BFM091", 2, 48)],
        ),
        ('label = "XLA_USE_BF16 is on"  # XLA_DOWNCAST_BF16 in a comment\n', [("BFM131", 1, 10)]),
        ('import subprocess\nsubprocess.run(["env", "XLA_USE_BF16=1", "python", "t.py"])\n', [("BFM131", 2, 25)]),
        ('import subprocess\nsubprocess.run("XLA_USE_BF16=1 python t.py", shell=False)\n', [("BFM131", 2, 17)]),
        ('cmd = b"XLA_USE_BF16=1 python t.py"\nimport os\nos.system(cmd)\n', [("BFM133", 1, 9)]),
        ('x = "a=1\\nXLA_USE_BF16=1"\n', [("BFM131", 1, 11)]),
        ('x = "MY_XLA_USE_BF16=1"\n', []),
    ],
    ids=[
        "module-docstring",
        "function-docstring",
        "help",
        "description",
        "label",
        "argv-list",
        "shell-false",
        "bytes-command",
        "escape",
        "other-name",
    ],
)
def test_strings_of_python(source, expected):
    assert diagnosed(source) == expected


@pytest.mark.parametrize(
    "source, script",
    [
        ('import os\nos.system("XLA_USE_BF16=1 python3 -u train.py --steps 3")\n', "train.py"),
        ('import os\nos.popen("cd src && export XLA_USE_BF16=1 && python -m pkg.train")\n', "-m pkg.train"),
        ('import subprocess as sp\nsp.Popen("XLA_USE_BF16=1 {} t.py".format("python"), shell=True)\n', "t.py"),
        ('import subprocess\nsubprocess.call("%s XLA_USE_BF16=1 python %s" % ("env", "z.py"), shell=True)\n', "z.py"),
        ('import subprocess\nsubprocess.run(" ".join(["XLA_USE_BF16=1", "python", "j.py"]), shell=True)\n', "j.py"),
        (
            'from subprocess import check_output\nbase = "XLA_USE_BF16=1 "\n'
            'cmd = base + "torchrun --nnodes=1 a.py"\ncheck_output(cmd, shell=True)\n',
            "a.py",
        ),
        (
            "import subprocess\ndef go(n):\n"
            '    subprocess.run(f"XLA_USE_BF16=1 torchrun --nproc_per_node={n} '
            'b.py", shell=True)\n',
            "b.py",
        ),
        (
            'import subprocess\ndef go(script):\n    subprocess.run(f"XLA_USE_BF16=1 python {script}", shell=True)\n',
            None,
        ),
        ("get_ipython().system('XLA_USE_BF16=1 python3 c.py')\n", "c.py"),  # a notebook exported by nbconvert
        # a command written over several lines with shell line continuations (a notebook's
        # f-string of torchrun options): the backslash-newline is not a word
        (
            'import subprocess\nn = 2\nCMD = f"""XLA_USE_BF16=1 torchrun --nproc_per_node={n} \\\n'
            '    run_glue.py \\\n    --do_train"""\nsubprocess.check_call(CMD, shell=True)\n',
            "run_glue.py",
        ),
    ],
    ids=[
        "os.system",
        "os.popen",
        "format",
        "percent",
        "join",
        "names-and-plus",
        "option-value-computed",
        "script-computed",
        "ipython",
        "line-continuations",
    ],
)
def test_shell_commands_name_their_script(source, script):
    result = migrate_source(source, "stochastic", "launch.py")
    assert [d.code for d in result.diagnostics] == ["BFM133"], [d.format_text() for d in result.diagnostics]
    message = result.diagnostics[0].message
    assert message.startswith("XLA_USE_BF16=1 is set in a Python string run as a shell command (line ")
    if script is None:
        assert message.endswith("migrate the script the command launches")
    else:
        assert message.endswith(f"migrate the script the command launches (`{script}`)")


def test_in_a_test_the_string_is_the_tests():
    source = 'import subprocess\n\ndef test_run():\n    subprocess.run("XLA_USE_BF16=1 python t.py", shell=True)\n'
    assert diagnosed(source, "tests/helpers.py") == [("BFM052", 4, 21)]
    assert diagnosed(source, "tests/test_run.py") == [("BFM052", 4, 21)]


def test_the_helpers_the_codemod_writes_are_not_findings():
    """gpu-compatible mode writes a helper with a docstring of its own, which names no legacy
    variable (a grep for them must not find the migrated file) and is not a finding."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\n'
        "model = torch.nn.Linear(2, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loss = model(torch.randn(3, 2)).sum()\n"
    )
    once = migrate_source(source, "gpu-compatible", "train.py")
    assert "replacing the legacy bf16 environment switch" in once.code and "XLA_" not in once.code
    assert migrate_source(once.code, "gpu-compatible", "train.py").diagnostics == []


def test_a_message_is_one_line_whatever_its_fields_hold():
    """A field quoting code with a line break (a command string, a launch line) is written with
    ``\\n``: one finding per line in the text output, and a GitHub workflow command ends at
    the end of its line."""
    from bf16_migrate.diagnostics import message

    text = message("BFM133", subject="XLA_USE_BF16=1 is set", where="line 3", command="a \\\nb", script="x\r\ny.py")
    assert "\n" not in text and "\r" not in text
    assert "`a \\\\nb`" in text and "`x\\r\\ny.py`" in text
