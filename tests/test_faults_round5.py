"""Round 5 of the fault hunt (106 cases: launchers and schedulers people use on Trainium and TPU
clusters, the file system, encodings and newlines, parsing extremes, concurrent runs): each test
is a case that failed before its fix (a traceback, a file that names a variable passed over in
silence, a switch removed without its replacement, a run that did not end)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from bf16_migrate.carriers import analyze
from bf16_migrate.command_lines import read_command
from bf16_migrate.project import migrate_paths
from bf16_migrate.scan import kind_of

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()
CAST = "model.to(torch.bfloat16)"


def run(tmp_path: Path, files: dict[str, str], write: bool = False):
    (tmp_path / "train.py").write_text(TRAIN)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    outcome = migrate_paths([tmp_path], "stochastic", write=write)
    found = [(Path(d.path).relative_to(tmp_path).as_posix(), d.code, d.fixed) for d in outcome.diagnostics]
    return outcome, found


# -- a switch removed without its replacement -------------------------------------------------------------------------
def test_a_launched_shell_script_that_does_not_parse_keeps_the_setting(tmp_path):
    """`./other.sh` that bash -n refuses: its launches could not be followed, yet the setting was
    removed (as if it reached no Python) while other.sh still starts train.py, now in f32."""
    outcome, found = run(
        tmp_path, {"run.sh": "export XLA_USE_BF16=1\n./other.sh\n", "other.sh": "if then fi\npython train.py\n"}
    )
    assert found == [("run.sh", "BFM111", False)]
    assert outcome.changed == []


def test_a_python_batch_script_submitted_by_sbatch_is_a_python_launch(tmp_path):
    """sbatch runs a batch script by its #! line: job.py is Python, not a shell script to follow."""
    files = {
        "submit.sh": "sbatch --export=ALL,XLA_USE_BF16=1 job.py\n",
        "job.py": "#!/usr/bin/env python3\n#SBATCH -N 1\nimport runpy\nrunpy.run_path('train.py')\n",
    }
    outcome, found = run(tmp_path, files)
    assert [f for f in found if f[0] == "submit.sh"] == [("submit.sh", "BFM110", False)]
    assert outcome.changed == []


def test_only_the_last_sbatch_export_directive_takes_effect(tmp_path):
    job = "#!/bin/bash\n#SBATCH --export=ALL,XLA_USE_BF16=1\n#SBATCH --export=ALL,LR=1\nsrun python train.py\n"
    outcome, found = run(tmp_path, {"job.sh": job})
    assert found == [("job.sh", "BFM092", False)] and outcome.changed == []


# -- schedulers and notebooks that were passed over in silence -------------------------------------------------------
@pytest.mark.parametrize(
    "directive, scheduler",
    [
        ("#PBS -v XLA_USE_BF16=1", "PBS/Torque"),
        ("#$ -v XLA_USE_BF16=1", "Grid Engine"),
        ('#BSUB -env "all, XLA_USE_BF16=1"', "LSF"),
    ],
)
@pytest.mark.parametrize("name", ["job.sh", "job.pbs"])
def test_another_schedulers_directive_is_reported(tmp_path, directive, scheduler, name):
    outcome, found = run(tmp_path, {name: f"#!/bin/bash\n{directive}\npython train.py\n"})
    assert found == [(name, "BFM115", False)]
    assert scheduler in outcome.diagnostics[0].message and outcome.changed == []


@pytest.mark.parametrize(
    "text, reported",
    [
        ("# %%\n# %env XLA_USE_BF16=1\n# %%\nimport subprocess\n", True),
        ("# +\n# !XLA_USE_BF16=1 python train.py\n# -\nprint(1)\n", True),
        ("# %env XLA_USE_BF16=1 was how we ran it\nprint(1)\n", False),  # no cell marker: a plain comment
    ],
)
def test_a_jupytext_notebooks_commented_magic_is_reported(tmp_path, text, reported):
    _, found = run(tmp_path, {"nb.py": text})
    assert (("nb.py", "BFM116", False) in found) == reported


def test_docker_env_list_is_an_env_file(tmp_path):
    assert kind_of(Path("env.list")) == "dotenv"
    outcome, found = run(
        tmp_path, {"env.list": "XLA_USE_BF16=1\n", "run.sh": "docker run --env-file env.list i python train.py\n"}
    )
    assert ("env.list", "BFM001", True) in found and ("train.py", "BFM001", True) in found


def test_salloc_runs_the_command_after_its_options():
    cmd = read_command(["salloc", "-N", "1", "--time=10", "srun", "--export=ALL,XLA_USE_BF16=1", "python", "t.py"])
    assert cmd.target is not None and cmd.target[1] == "t.py" and [e.name for e in cmd.env] == ["XLA_USE_BF16"]


# -- tracebacks -------------------------------------------------------------------------------------------------------
def test_a_gitignore_line_git_passes_over_is_passed_over(tmp_path):
    """pathspec raised GitIgnorePatternError for a lone `!`: a traceback; git takes the other lines."""
    (tmp_path / ".gitignore").write_text("!\nignored/\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "run.sh").write_text("export XLA_USE_BF16=1\npython ../train.py\n")
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    (tmp_path / "train.py").write_text(TRAIN)
    from bf16_migrate.ignore import GitIgnore

    ignore = GitIgnore(tmp_path)
    assert ignore(str(tmp_path / "ignored"), True) and not ignore(str(tmp_path / "run.sh"), False)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        ignored = subprocess.run(
            ["git", "check-ignore", "ignored", "run.sh"], cwd=tmp_path, capture_output=True, text=True
        )
        assert ignored.stdout.split() == ["ignored"]


def test_a_notebook_nested_deeper_than_json_recurses_is_located(tmp_path):
    """The notebook was read in the large-stack worker, but locating its finding for the report
    (SourceLocator, in the main thread) hit a RecursionError: a traceback after the run."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%env XLA_USE_BF16=1")]
    text = nbformat.writes(nb).replace('"metadata": {}', '"metadata": ' + '{"a":' * 3000 + "1" + "}" * 3000, 1)
    (tmp_path / "n.ipynb").write_text(text)
    from bf16_migrate.carriers.notebook_json import SourceLocator

    assert SourceLocator(text).position(1, 1, 1) is not None
    json.loads(nbformat.writes(nb))  # the notebook itself is fine


# -- a run that did not end -------------------------------------------------------------------------------------------
def test_a_very_long_and_list_is_read_in_linear_steps():
    """A RUN with 3000 `&& \\` continuations: each command's context walked every ancestor of an
    `&&` list as deep as it is long (over 300 s). Not a timed test: the count of parent steps."""
    from bf16_migrate.carriers.shell.context import Contexts
    from bf16_migrate.carriers.shell.parsed import read_source

    text = "export XLA_USE_BF16=1\n" + "true && " * 3000 + "python train.py\n"
    source = read_source(text, "r.sh", lambda off: (1, off + 1))
    from bf16_migrate.carriers.shell.context import index_functions

    contexts = Contexts(source, index_functions(source))
    steps = []
    original = Contexts._step

    def counting(self, above, anc, child):
        steps.append(1)
        return original(self, above, anc, child)

    Contexts._step = counting  # type: ignore[method-assign]
    try:
        stack = [source.tree.root_node]
        while stack:
            node = stack.pop()
            contexts.of(node)
            stack.extend(node.children)
    finally:
        Contexts._step = original  # type: ignore[method-assign]
    nodes = sum(1 for _ in _all(source.tree.root_node))
    assert len(steps) < nodes  # each node's step once: linear, not the depth times the nodes
    (launch,) = [x for x in analyze("shell", text, "r.sh").launches if x.target]
    assert launch.target is not None and launch.target[1] == "train.py" and launch.reached_by


def _all(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def test_two_hard_links_in_the_tree_are_one_file(tmp_path):
    """run.sh and run2.sh, one inode: written through the first name, the second was then
    "changed while bf16-migrate was writing": an error, exit 2, its finding "(not written)"."""
    import os

    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    os.link(tmp_path / "run.sh", tmp_path / "run2.sh")
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert outcome.errors == [] and sorted(p.name for p in outcome.changed) == ["run.sh", "train.py"]
    assert (tmp_path / "run2.sh").read_text() == "export NEURON_RT_STOCHASTIC_ROUNDING_EN=1\npython train.py\n"
    assert (tmp_path / "run2.sh").stat().st_nlink == 2
