"""Hostile and odd inputs that once hung the tool, changed precision in silence, or showed Python
internals: bounded work for YAML aliases and shell functions, settings that never take effect,
two variables written together, the ways a child process's environment is built, excludes on
launched scripts, malformed notebooks, and the command line's own edges.

Each case is a regression test: it failed before its fix (a hang past the time bound, a script
cast to bf16 whose legacy run trained in fp32, a traceback or a Python error in the message).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bf16_migrate.carriers import analyze
from bf16_migrate.project import migrate_paths
from bf16_migrate.python import migrate_source

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (
    (ROOT / "fixtures" / "mlp_regression" / "train.py").read_text().replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
)
assert 'XLA_USE_BF16"] =' not in TRAIN


def cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *args], cwd=cwd, input=stdin, capture_output=True, text=True
    )


def tree(tmp_path: Path, **files: str) -> Path:
    """``train.py`` (a script with no legacy setting of its own) and ``files`` (name -> text)."""
    (tmp_path / "train.py").write_text(TRAIN)
    for name, text in files.items():
        path = tmp_path / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def findings(outcome, name: str) -> list[str]:
    return [f"{d.code} {'fixed' if d.fixed else 'kept'}" for d in outcome.diagnostics if Path(d.path).name == name]


# -- bounded work ------------------------------------------------------------------------------------------------------
def alias_bomb(levels: int, per_level: int = 9) -> str:
    lines = ['a0: &a0 ["XLA_USE_BF16"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * per_level)}]")
    return "\n".join(lines) + "\nenv:\n  XLA_USE_BF16: '1'\n"


def test_a_yaml_alias_bomb_is_read_in_bounded_time():
    """500 bytes of nested aliases (9 per level) once took 20 s at 7 levels and more than a minute
    at 8: every alias was walked as a copy. 30 levels would be 9**29 copies."""
    text = alias_bomb(30)
    assert len(text) < 2000
    start = time.monotonic()
    analysis = analyze("yaml", text, "bomb.yaml")
    assert time.monotonic() - start < 2.0
    assert [e.variable for e in analysis.entries] == ["XLA_USE_BF16"]


def fan_out(levels: int) -> str:
    lines = ["#!/bin/bash", "export XLA_USE_BF16=1", 'f0() { python train.py "$@"; }']
    for i in range(1, levels + 1):
        call = f'f{i - 1} "$@"'
        lines.append(f"f{i}() {{ {'; '.join([call] * 9)}; }}")
    return "\n".join(lines) + f"\nf{levels} --steps 3\n"


def test_shell_functions_calling_each_other_many_times_over_are_followed_in_bounded_time(tmp_path):
    """f_i calls f_(i-1) nine times: following every path to `python train.py` once took 15 s
    at 5 levels (59,049 launches) and did not end at 11."""
    start = time.monotonic()
    analysis = analyze("shell", fan_out(11), "fan.sh")
    assert time.monotonic() - start < 2.0
    [launch] = analysis.launches
    assert launch.problem is not None
    assert launch.problem.startswith("following `f11` through the functions it calls reads more than 4096 commands")
    # a few levels are still followed, and each launch is found once
    [small] = analyze("shell", fan_out(2), "fan.sh").launches
    assert small.problem is None and small.target == ("script", "train.py")
    outcome = migrate_paths([tree(tmp_path, **{"fan.sh": fan_out(11)})], "stochastic", write=False)
    assert findings(outcome, "fan.sh") == ["BFM111 kept"] and outcome.changed == []


# -- YAML anchors, aliases and merge keys ------------------------------------------------------------------------------
MERGED = """.defaults: &defaults
  image: python:3.11
  variables:
    XLA_USE_BF16: "1"
train:
  <<: *defaults
  script:
    - python train.py
"""


def test_a_merge_key_gives_one_finding_and_its_env_reaches_the_job(tmp_path):
    outcome = migrate_paths([tree(tmp_path, **{"ci.yml": MERGED})], "stochastic", write=False)
    assert findings(outcome, "ci.yml") == ["BFM001 fixed"]  # was BFM110 twice: walked once per reference
    assert sorted(p.name for p in outcome.changed) == ["ci.yml", "train.py"]
    assert 'NEURON_RT_STOCHASTIC_ROUNDING_EN: "1"' in outcome.sources[tmp_path / "ci.yml"][1]


@pytest.mark.parametrize(
    "text, why",
    [
        (  # an env item that is an alias: removing "it" deleted the anchor's lines and left `- *bf`
            'common:\n  - &bf\n    name: XLA_USE_BF16\n    value: "1"\nspec:\n  containers:\n    - name: t\n'
            '      command: ["python", "train.py"]\n      env:\n        - *bf\n',
            "an alias",
        ),
        (  # an env container that is an alias: `environment: {} *env` was written
            'x-env: &env\n  XLA_USE_BF16: "1"\nservices:\n  train:\n    command: python train.py\n'
            "    environment: *env\n",
            "an alias",
        ),
        (  # a value that is an alias: the anchor's own definition was rewritten (`x-on: 1`)
            'x-on: &on "1"\nservices:\n  train:\n    command: python train.py\n    environment:\n'
            "      XLA_USE_BF16: *on\n      OTHER: *on\n",
            "an alias",
        ),
        (  # a value that carries an anchor others use: removing the line left `OTHER: *on` undefined
            'services:\n  train:\n    command: python train.py\n    environment:\n      XLA_USE_BF16: &on "1"\n'
            "      OTHER: *on\n",
            "anchor &on",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_yaml_shared_through_an_anchor_or_alias_is_kept_and_reported(tmp_path, text, why, mode):
    outcome = migrate_paths([tree(tmp_path, **{"job.yaml": text})], mode, write=False)
    assert outcome.changed == [] and not outcome.errors
    [kept] = [d for d in outcome.diagnostics if d.path.endswith("job.yaml")]
    assert kept.code == "BFM131" and not kept.fixed
    assert f"XLA_USE_BF16 is in YAML shared through an anchor or alias ({why}): edit it by hand" in kept.message


# -- settings that never take effect: reported as dead, nothing else changes -------------------------------------------
@pytest.mark.parametrize(
    "name, text, why",
    [
        (
            "run.sh",
            "#!/bin/bash\nsetup() {\n  export XLA_USE_BF16=1\n}\npython train.py --steps 10\n",
            "it is set in the function `setup`, which nothing in this script calls by name: it never takes effect",
        ),
        (
            "run.sh",
            "#!/bin/bash\nif false; then\n  export XLA_USE_BF16=1\nfi\npython train.py\n",
            "it is in the `then` branch of `if false`, which never runs: it never takes effect",
        ),
        (
            "run.sh",
            "#!/bin/bash\nif [ 1 = 1 ]; then :; else export XLA_USE_BF16=1; fi\npython train.py\n",
            "it is in the `else` branch of `if [ 1 = 1 ]`, which never runs: it never takes effect",
        ),
        (
            "run.sh",
            "#!/bin/bash\nfalse && export XLA_USE_BF16=1\npython train.py\n",
            "it follows `false &&`, so it never runs: it never takes effect",
        ),
        (
            "Dockerfile",
            'FROM python:3.11\nENV XLA_USE_BF16=1\nENV XLA_USE_BF16=0\nCMD ["python", "train.py"]\n',
            "XLA_USE_BF16 is set again at line 3 (XLA_USE_BF16=0) before anything runs: this setting never took effect",
        ),
        (
            "job.yaml",
            'spec:\n  containers:\n    - name: t\n      command: ["python", "train.py"]\n      env:\n'
            '        - name: XLA_USE_BF16\n          value: "1"\n        - name: XLA_USE_BF16\n          value: "0"\n',
            "XLA_USE_BF16 is set again at line 8 (XLA_USE_BF16=0), whose value is the one in force: this setting never "
            "took effect",
        ),
        (
            "ci.yml",
            'on: push\nenv:\n  XLA_USE_BF16: "1"\njobs:\n  t:\n    runs-on: x\n    steps:\n'
            '      - run: python train.py\n        env:\n          XLA_USE_BF16: "0"\n',
            "XLA_USE_BF16 is set again at line 10 (XLA_USE_BF16=0), whose value is the one in force: this setting "
            "never took effect",
        ),
    ],
)
def test_a_setting_that_never_takes_effect_is_reported_and_changes_nothing(tmp_path, name, text, why):
    """The legacy run of train.py was fp32 in every case: it was cast to bf16 and the setting
    removed ("[fixed]", exit 0)."""
    root = tree(tmp_path, **{name: text})
    result = cli(".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert (root / "train.py").read_text() == TRAIN and (root / name).read_text() == text
    dead = [line for line in result.stdout.splitlines() if " BFM092 " in line]
    assert dead and dead[0].endswith(f"BFM092 XLA_USE_BF16 kept: {why}")
    assert "[fixed]" not in result.stdout


def test_a_function_named_but_never_called_keeps_its_setting(tmp_path):
    """`trap setup EXIT` runs setup after the launch: the setting was not in force for it."""
    text = "#!/bin/bash\nsetup() { export XLA_USE_BF16=1; }\ntrap setup EXIT\npython train.py\n"
    outcome = migrate_paths([tree(tmp_path, **{"run.sh": text})], "stochastic", write=False)
    assert outcome.changed == []
    [kept] = [d for d in outcome.diagnostics if d.path.endswith("run.sh")]
    assert kept.code == "BFM131" and "which this script never calls as a command (line 3 names it)" in kept.message


def test_a_called_function_and_a_live_branch_still_migrate(tmp_path):
    text = '#!/bin/bash\nsetup() { export XLA_USE_BF16=1; }\nmain() { setup; python train.py; }\nmain "$@"\n'
    outcome = migrate_paths([tree(tmp_path, **{"run.sh": text})], "stochastic", write=False)
    assert sorted(p.name for p in outcome.changed) == ["run.sh", "train.py"]
    outcome = migrate_paths(
        [tree(tmp_path, **{"run.sh": "#!/bin/bash\nif true; then export XLA_USE_BF16=1; fi\npython train.py\n"})],
        "stochastic",
        write=False,
    )
    assert sorted(p.name for p in outcome.changed) == ["run.sh", "train.py"]


# -- two variables written in one branch: migrated together or kept together -------------------------------------------
PRECISION_STATE = '''"""Process-wide precision of a small launcher library: one legacy switch, never both."""
import os


class PrecisionState:
    """Chooses how the XLA device computes for the whole process."""

    def __init__(self, precision="no", downcast=False):
        self.precision = precision
        self.downcast = False
        if precision == "bf16":
            if downcast:
                os.environ["XLA_USE_BF16"] = str(0)
                os.environ["XLA_DOWNCAST_BF16"] = str(1)
                self.downcast = True
            else:
                os.environ["XLA_USE_BF16"] = str(1)
                os.environ["XLA_DOWNCAST_BF16"] = str(0)
'''


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_the_off_write_of_a_pair_stays_with_the_on_write_it_keeps_exclusive(mode):
    """The state code has no model, so its `str(1)` writes are kept (BFM010); its `str(0)` writes
    were removed ("bf16 was off"), so with the other variable set from outside both were on."""
    result = migrate_source(PRECISION_STATE, mode, "state.py")
    assert result.code == PRECISION_STATE
    by_line = {d.line: d for d in result.diagnostics}
    assert by_line[13].code == "BFM002" and not by_line[13].fixed
    assert by_line[13].message.startswith(
        "XLA_USE_BF16=str(0) means bf16 was off, but it is written in the same branch as XLA_DOWNCAST_BF16=str(1) "
        "(line 14), which is kept: kept with it"
    )
    assert by_line[18].code == "BFM002" and not by_line[18].fixed
    assert {by_line[14].code, by_line[17].code} == {"BFM010"}


def test_a_pair_in_a_script_that_migrates_goes_together():
    source = TRAIN.replace(
        "import os\n", 'import os\nos.environ["XLA_USE_BF16"] = "1"\nos.environ["XLA_DOWNCAST_BF16"] = "0"\n', 1
    )
    result = migrate_source(source, "stochastic", "train.py")
    assert "XLA_" not in result.code.split('"""', 2)[2]
    assert {d.code: d.fixed for d in result.diagnostics if d.code in ("BFM001", "BFM002")} == {
        "BFM001": True,
        "BFM002": True,
    }


# -- the environment of a child process --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source, column",
    [
        ('subprocess.run([sys.executable, "train.py"], env=dict(os.environ, XLA_USE_BF16="1"))\n', 67),
        (
            'env = os.environ.copy()\nenv.update(XLA_USE_BF16="1")\nsubprocess.run(["python", "train.py"], env=env)\n',
            12,
        ),
        ('env = os.environ.copy()\nenv["XLA_USE_BF16"] = "1"\nsubprocess.run(["python", "train.py"], env=env)\n', 5),
        ('subprocess.run([sys.executable, "train.py"], env={**os.environ, "XLA_USE_BF16": "1"})\n', 65),
        ('os.environ["XLA_USE_BF16"]: str = "1"\n', 12),  # once taken for a read (BFM050)
        ('os.environ["XLA_USE_BF16"], step = "1", 0\n', 12),
    ],
)
def test_every_way_of_building_a_child_environment_is_reported(source, column):
    result = migrate_source("import os\nimport subprocess\nimport sys\n" + source, "stochastic", "launch.py")
    [finding] = result.diagnostics
    assert (finding.code, finding.col, finding.fixed) == ("BFM042", column, False)
    assert finding.message.startswith("XLA_USE_BF16 is named here outside a write the codemod can rewrite")


# -- excludes and ignores apply to the scripts a launcher starts -------------------------------------------------------
@pytest.mark.parametrize("how", ["--exclude", "config", "gitignore"])
def test_an_excluded_launched_script_is_reported_not_rewritten(tmp_path, how):
    root = tree(tmp_path, **{"run.sh": "#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py --steps 10\n"})
    args = ["."]
    if how == "--exclude":
        args += ["--exclude", "train.py"]
    elif how == "config":
        (root / "pyproject.toml").write_text('[tool.bf16-migrate]\nexclude = ["train.py"]\n')
    else:
        (root / ".git").mkdir()
        (root / ".gitignore").write_text("train.py\n")
    result = cli(*args, cwd=root)
    assert result.returncode == 1, result.stderr
    assert (root / "train.py").read_text() == TRAIN
    assert (root / "run.sh").read_text().startswith("#!/bin/bash\nexport XLA_USE_BF16=1\n")
    [line] = [line for line in result.stdout.splitlines() if line.startswith("run.sh")]
    assert line.startswith("run.sh:2:8: BFM111 XLA_USE_BF16 kept: the Python launch at line 3")
    assert "train.py: it is excluded (" in line and "not read, not rewritten" in line


def test_an_excluded_module_of_a_migrated_script_is_reported_not_rewritten(tmp_path):
    util = 'import os\n\nEPS = 1e-3 if os.environ.get("XLA_USE_BF16") == "1" else 1e-8\n'
    script = TRAIN.replace("import argparse\n", "import argparse\n\nimport helpers\n", 1)
    root = tree(tmp_path, **{"helpers.py": util, "run.sh": "#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n"})
    (root / "train.py").write_text(script)
    result = cli(".", "--exclude", "helpers.py", cwd=root)
    assert (root / "helpers.py").read_text() == util
    assert "model.to(torch.bfloat16)" in (root / "train.py").read_text()
    assert (
        "helpers.py:1:1: BFM093 helpers.py is imported by train.py, which ran under XLA_USE_BF16=1, but it is excluded "
        "(it matches the exclude pattern `helpers.py`): not migrated; migrate it by hand, or stop excluding it"
    ) in result.stdout
    assert result.returncode == 1


# -- malformed notebooks: one line naming the file and what is wrong ---------------------------------------------------
CELL: dict[str, Any] = {
    "cell_type": "code",
    "source": "%env XLA_USE_BF16=1\n",
    "metadata": {},
    "outputs": [],
    "execution_count": None,
}


@pytest.mark.parametrize(
    "notebook, message",
    [
        ({"cells": [None, CELL]}, "cell 1 is null, not an object"),
        ({"cells": [["%env XLA_USE_BF16=1"]]}, "cell 1 is a list, not an object"),
        ({"cells": "XLA_USE_BF16"}, "`cells` is a string, not a list"),
        ({"x": "XLA_USE_BF16"}, "it has no `cells`"),
        ({"cells": [{**CELL, "cell_type": 3}]}, "the `cell_type` of cell 1 is a number, not a string"),
        (
            {"cells": [{**CELL, "source": ["%env ", 5, "XLA_USE_BF16=1"]}]},
            "the `source` of cell 1 is a list holding a number, not a string or a list of strings",
        ),
        ({"cells": [{**CELL, "metadata": None}]}, "the `metadata` of cell 1 is null, not an object"),
        ({"cells": [CELL], "nbformat": "4"}, "its `nbformat` (the format's version) is a string, not a number"),
        ({"cells": [CELL], "nbformat": 4.0}, "its `nbformat` (the format's version) is 4.0, not a whole number"),
    ],
)
def test_a_malformed_notebook_gets_one_line_saying_what_is_wrong(tmp_path, notebook, message):
    document = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, **notebook}
    (tmp_path / "nb.ipynb").write_text(json.dumps(document))
    result = cli("nb.ipynb", "--check", cwd=tmp_path)
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: nb.ipynb:1:1: not a readable notebook: {message}"
    ]
    assert "Traceback" not in result.stderr and "object has no attribute" not in result.stderr


def test_a_notebook_with_a_key_given_twice_is_refused(tmp_path):
    """json keeps the last `cells`, while the cells' places were looked up in the first: edits
    would have gone to the wrong bytes."""
    first = json.dumps([{**CELL, "source": "x = 1\n"}])
    second = json.dumps([CELL])
    (tmp_path / "nb.ipynb").write_text(f'{{"cells": {first}, "cells": {second}, "metadata": {{}}, "nbformat": 4}}')
    result = cli("nb.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert "error: nb.ipynb:1:1: not a readable notebook: the key 'cells' appears twice in one object" in result.stderr


# -- the command line's own edges --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, problem",
    [
        ("..", "names a directory, not a file"),
        ("/", "names a directory, not a file"),
        (".", "names a directory, not a file"),
        ("src", "is a directory, not a file"),
        ("src/", "names a directory, not a file"),
        ("/etc/train.py", "is outside the current directory"),
        ("../train.py", "is outside the current directory"),
    ],
)
def test_a_stdin_filename_that_is_a_directory_or_outside_the_tree_is_a_usage_error(tmp_path, name, problem):
    (tmp_path / "src").mkdir()
    result = cli("-", "--stdin-filename", name, cwd=tmp_path, stdin='import os\nos.environ["XLA_USE_BF16"] = "1"\n')
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"usage error: --stdin-filename {name}: {problem}")


@pytest.mark.parametrize("name", ["sitecustomize", "usercustomize", "__main__", "__init__", "conftest", "__x__"])
def test_a_helpers_module_python_imports_by_itself_is_refused(tmp_path, name):
    root = tree(tmp_path, **{"run.sh": "#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n"})
    result = cli(".", "--mode", "gpu-compatible", "--helpers-module", name, cwd=root)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"usage error: --helpers-module {name!r}: Python or pytest imports a module of that name by itself; choose "
        "another name"
    )
    assert not (root / f"{name}.py").exists() and (root / "train.py").read_text() == TRAIN


def test_a_helpers_module_name_python_would_normalise_is_refused(tmp_path):
    """`import ℌelpers` imports `Helpers` (identifiers are NFKC-normalised), not the file `ℌelpers.py`."""
    result = cli(".", "--helpers-module", "ℌelpers", cwd=tree(tmp_path))
    assert result.returncode == 2 and "not a plain Python module name" in result.stderr
