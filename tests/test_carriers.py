"""Carriers (shell, Dockerfile, YAML, .env, notebooks): golden outputs per mode, idempotence,
validity of what is written, and the pieces (launch reading, resolution, discovery, errors)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import json5
import nbformat
import pytest
from ruamel.yaml import YAML

from bf16_migrate.carriers import analyze
from bf16_migrate.carriers.resolve import resolve_module, resolve_script, uses_torch
from bf16_migrate.command_lines import read_command
from bf16_migrate.project import migrate_paths
from bf16_migrate.scan import kind_of, scan

from conftest import LEGACY
from goldens import expected_dir
from test_carriers_cases import CARRIERS, CASES, LAUNCHED, MODES, carrier_files, run_case


def test_every_carrier_shape_has_a_case():
    assert set(CASES) >= {
        "shell_functions",
        "shell_if_unset",
        "shell_heredoc",
        "shell_launchers",
        "shell_unresolved",
        "dockerfile_multistage",
        "k8s_job",
        "compose",
        "dotenv",
        "notebook",
        "ci_workflow",
        "taskfile",
        "procfile",
        "makefile",
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden(case, mode, tmp_path, goldens):
    changed, diagnostics, tree = run_case(case, mode, tmp_path)
    goldens.check(expected_dir(CARRIERS / case, mode), changed, "".join(line + "\n" for line in diagnostics))
    # the launched script received the mode's change exactly when a launcher's setting went
    launched = (tree / LAUNCHED).read_text()
    migrated = any(
        "is set by the launcher of this script" in d and d.startswith(f"{case}/{LAUNCHED}") for d in diagnostics
    )
    marker = 'torch.autocast("xla"' if mode == "amp" else ".to(torch.bfloat16)"
    assert (marker in launched) == migrated


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, mode, tmp_path):
    changed, first, tree = run_case(case, mode, tmp_path)
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    outcome = migrate_paths([tree], mode, write=True)
    assert not outcome.errors
    assert outcome.changed == []
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before
    assert not [d for d in outcome.diagnostics if d.fixed]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_outputs_stay_valid(case, mode, tmp_path):
    """What is written still parses: bash -n, YAML, notebook schema, Dockerfile instructions."""
    _, _, tree = run_case(case, mode, tmp_path)
    for rel in carrier_files(tree):
        path = tree / rel
        kind = kind_of(path)
        if kind == "shell" and shutil.which("bash"):
            assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0, path.read_text()
        elif kind == "yaml":
            list(YAML(typ="safe").load_all(path.read_text()))
        elif kind == "notebook":
            nbformat.validate(nbformat.read(str(path), as_version=4))
        elif kind == "vscode":
            json5.loads(path.read_text())
        if kind in ("shell", "dockerfile", "dotenv", "yaml", "notebook", "vscode", "procfile", "makefile"):
            analyze(kind, path.read_text(), str(path))  # re-parses


def test_no_legacy_setting_left_where_nothing_was_kept(tmp_path):
    for case in CASES:
        _, diagnostics, tree = run_case(case, "stochastic", tmp_path / case)
        kept = {
            d.split(":")[0].split("#")[0]
            for d in diagnostics
            if " BFM1" in d and "[fixed]" not in d and " BFM120 " not in d
        }
        # a message the script prints is text, not a setting: reported (BFM091), left to the user
        prose = {(d.split(":")[0], int(d.split(":")[1])) for d in diagnostics if " BFM091 " in d}
        for rel in carrier_files(tree):
            if f"{case}/{rel}" in kept:
                continue
            source = (CARRIERS / case / rel).read_text().splitlines()
            printed = {source[n - 1] for f, n in prose if f == f"{case}/{rel}"}
            text = "\n".join(line for line in (tree / rel).read_text().splitlines() if line not in printed)
            if rel.suffix == ".ipynb":  # outputs are history, left as they are: the code cells
                text = "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells if c.cell_type == "code")
            assert not any(v in text for v in LEGACY), (case, rel)


# -- launch reading -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "words, target, problem",
    [
        (["python", "train.py"], ("script", "train.py"), None),
        (["python3", "-u", "-W", "ignore", "src/train.py", "--lr", "1"], ("script", "src/train.py"), None),
        (["python3.11", "-m", "pkg.train"], ("module", "pkg.train"), None),
        (["torchrun", "--nproc_per_node=2", "--nnodes", "1", "--standalone", "train.py"], ("script", "train.py"), None),
        (["torchrun", "-m", "pkg.train"], ("module", "pkg.train"), None),
        (["python", "-m", "torch.distributed.run", "--nproc-per-node", "4", "t.py"], ("script", "t.py"), None),
        (["time", "-p", "nohup", "python", "t.py"], ("script", "t.py"), None),
        (["env", "-u", "A", "B=1", "python", "t.py"], ("script", "t.py"), None),
        (["docker", "run", "--rm", "-v", "a:b", "-e", "X=1", "img", "python", "t.py"], ("script", "t.py"), None),
        (["mpirun", "-np", "2", "-x", "X=1", "python", "t.py"], ("script", "t.py"), None),
        (["bash", "run.sh"], ("shell", "run.sh"), None),
        (["python", None], None, "an interpreter option or the script is computed"),
        (["python", "-c", "import torch"], ("inline", "import torch"), None),
        (["python", "-c", None], None, "`python -c` runs code computed at run time"),
        (["docker", "run", "img"], None, "the container runs the image's default command"),
    ],
)
def test_read_command(words, target, problem):
    cmd = read_command(words)
    assert cmd.target == target
    assert cmd.problem == problem


def test_read_command_tools_are_not_launches():
    assert not read_command(["python", "-m", "pip", "install", "x"]).python
    assert not read_command(["python", "-c", "print(1)"]).python
    assert not read_command(["echo", "python", "t.py"]).python


def test_wrapper_settings_are_read():
    cmd = read_command(["docker", "run", "-e", "XLA_USE_BF16=1", "--env=A=2", "-e", "B", "img", "python", "t.py"])
    assert [(e.name, e.value, e.action, e.words) for e in cmd.env] == [
        ("XLA_USE_BF16", "1", "set", [2, 3]),
        ("A", "2", "set", [4]),
        ("B", None, "pass", [5, 6]),
    ]


# -- resolution ------------------------------------------------------------------------------------------
def test_resolution_rules(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text("import torch\n")
    (tmp_path / "src" / "pkg" / "train.py").write_text("from . import model\n")
    (tmp_path / "src" / "pkg" / "model.py").write_text("import torch.nn\n")
    (tmp_path / "tools.py").write_text("import json\n")
    launcher = tmp_path / "scripts" / "run.sh"
    launcher.parent.mkdir()
    launcher.write_text("")
    for written in ("src/train.py", "/workspace/src/train.py"):
        found = resolve_script(written, launcher, tmp_path)[0]
        assert found is not None and found.resolve() == (tmp_path / "src" / "train.py").resolve()
    assert resolve_script("$SCRIPT", launcher, tmp_path) == (None, "its path is computed ($SCRIPT)")
    assert resolve_script("other.py", launcher, tmp_path)[0] is None
    module = resolve_module("pkg.train", launcher, tmp_path)[0]
    assert module is not None and module.resolve() == (tmp_path / "src" / "pkg" / "train.py").resolve()
    assert resolve_module("numpy.distutils", launcher, tmp_path)[0] is None
    assert uses_torch(tmp_path / "src" / "pkg" / "train.py", tmp_path)  # through its relative import
    assert not uses_torch(tmp_path / "tools.py", tmp_path)


def test_ambiguous_path_is_not_guessed(tmp_path):
    """``src/train.py`` exists beside the launcher and at the tree's root: two files, no guess."""
    for base in (tmp_path, tmp_path / "scripts"):
        (base / "src").mkdir(parents=True)
        (base / "src" / "train.py").write_text("import torch\n")
    path, problem = resolve_script("src/train.py", tmp_path / "scripts" / "run.sh", tmp_path)
    assert path is None and problem is not None and "several" in problem
    path, problem = resolve_script("/app/train.py", tmp_path / "scripts" / "run.sh", tmp_path)
    assert path is None and problem is not None and "not in the tree" in problem


# -- discovery -------------------------------------------------------------------------------------------
def test_discovery_by_name_extension_and_shebang(tmp_path):
    files = {
        "launch": "#!/usr/bin/env bash\nexport XLA_USE_BF16=1\n",
        "tool": "#!/usr/bin/env python3\nimport os\nos.environ['XLA_USE_BF16'] = '1'\n",
        "Dockerfile.train": "FROM x\nENV XLA_USE_BF16=1\n",
        "job.yml": "env:\n  XLA_USE_BF16: '1'\n",
        "nb.ipynb": json.dumps({"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}) + "XLA_USE_BF16",
        "train.env": "XLA_USE_BF16=1\n",
        ".env": "XLA_USE_BF16=1\n",
        "Makefile": "train:\n\tXLA_USE_BF16=1 python t.py\n",
        "NOTES.md": "XLA_USE_BF16\n",
        "weights.bin": "XLA_USE_BF16\0\0",
        "run.bash": "XLA_USE_BF16=1 python t.py\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    kinds = {c.path.name: c.kind for c in scan([tmp_path])}
    assert kinds == {
        "launch": "shell",
        "tool": "python",
        "Dockerfile.train": "dockerfile",
        "job.yml": "yaml",
        "nb.ipynb": "notebook",
        "train.env": "dotenv",
        ".env": "dotenv",
        "Makefile": "makefile",
        "run.bash": "shell",
        "NOTES.md": "docs",  # reported (BFM091), never rewritten
        "weights.bin": "unsupported",  # a binary file naming a variable: reported (BFM090), never read as source
    }


def test_ci_directories_are_walked(tmp_path):
    wf = tmp_path / ".github" / "workflows"
    wf.mkdir(parents=True)
    (wf / "ci.yml").write_text("env:\n  XLA_USE_BF16: '1'\n")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x.sh").write_text("export XLA_USE_BF16=1\n")
    assert [c.path.relative_to(tmp_path).as_posix() for c in scan([tmp_path])] == [".github/workflows/ci.yml"]


# -- errors: one line naming the file and the line ---------------------------------------------------------------
@pytest.mark.parametrize(
    "name, text, where",
    [
        (
            "bad.sh",
            "#!/bin/bash\nexport XLA_USE_BF16=1\nif then fi\n",
            ":3:",
        ),  # bash -n's line (tree-sitter's error node began on line 2)
        ("bad.yaml", "env:\n  XLA_USE_BF16: [1\n", ":3:"),
        ("bad.ipynb", '{"cells": [XLA_USE_BF16\n', ":1:"),
    ],
)
def test_unparseable_carrier_is_an_error_naming_file_and_line(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert len(outcome.errors) == 1
    assert outcome.errors[0].startswith(f"{path}{where}") and "\n" not in outcome.errors[0]
    assert path.read_text() == text


def test_a_procfiles_processes_are_its_command_lines():
    """``<process type>: <command>`` lines (Heroku's "The Procfile"); comments, blank lines and lines
    without a process type are not processes; the command's span is exact, blanks after the colon
    skipped; ``Procfile`` and ``Procfile.dev`` are Procfiles."""
    from bf16_migrate.carriers.procfile import commands

    text = "# dev\nweb: gunicorn app\n\nworker:   XLA_USE_BF16=1 python t.py\r\nnot a process\nempty:\n"
    found = [(name, text[a:b]) for name, a, b in commands(text)]
    assert found == [("web", "gunicorn app"), ("worker", "XLA_USE_BF16=1 python t.py")]
    assert kind_of(Path("Procfile")) == "procfile" and kind_of(Path("Procfile.dev")) == "procfile"


def test_a_makefiles_recipe_lines_are_its_commands():
    """A line that starts with a tab is a recipe line, make's ``@``/``-``/``+`` removed (GNU make manual,
    "Recipe Syntax"); a continued line, a line with a ``$`` (make expands it first), a comment and make's own
    settings are not read; ``Makefile``, ``GNUmakefile`` and ``*.mk`` are Makefiles."""
    from bf16_migrate.carriers.makefile import commands

    text = (
        "export XLA_USE_BF16 = 1\nPY ?= python\ntrain:\n\t@XLA_USE_BF16=1 python t.py\n\t-env A=1 python u.py\r\n"
        "\t$(PY) v.py\n\tpython w.py \\\n\t  --fast\n\t# a note\n"
    )
    # `PY ?= python` names the interpreter: `$(PY) v.py` is read as `python v.py` (hunt46 made it a command)
    assert [text[a:b] for a, b in commands(text)] == ["XLA_USE_BF16=1 python t.py", "env A=1 python u.py", "$(PY) v.py"]
    other = text.replace("PY ?= python", "PY ?= python -u")
    assert [other[a:b] for a, b in commands(other)] == ["XLA_USE_BF16=1 python t.py", "env A=1 python u.py"]
    assert kind_of(Path("Makefile")) == "makefile" and kind_of(Path("rules.mk")) == "makefile"
    assert kind_of(Path("GNUmakefile")) == "makefile"


def test_make_settings_and_unread_recipes_are_reported_not_rewritten(tmp_path):
    """make's own ``export`` and a recipe that names ``$(PY)`` are not read: each mention is reported, the
    file left as it is."""
    text = "export XLA_USE_BF16 = 1\ntrain:\n\tXLA_USE_BF16=1 $(PY) t.py\n"
    (tmp_path / "Makefile").write_text(text)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert (tmp_path / "Makefile").read_text() == text
    assert [(d.line, d.fixed) for d in outcome.diagnostics] == [(1, False), (3, False)]
    # the recipe line's finding says why it is not read and what to migrate: its script, with the setting
    recipe = outcome.diagnostics[1].message
    assert "make expands before the shell reads it" in recipe, recipe
    assert recipe.endswith("then `bf16-migrate t.py --legacy-env XLA_USE_BF16=1`"), recipe


TINY_STEP = (
    "import torch\nimport torch_xla\nmodel = torch.nn.Linear(2, 2).to(torch_xla.device())\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "loss = model(torch.ones(1, 2).to(torch_xla.device())).sum()\nloss.backward()\nopt.step()\n"
)
"""A one-step training script on the XLA device, launched by the recipes below."""


def _the_recipe_migrates(tmp_path, text):
    """A Makefile ``text`` whose recipe launches t.py (:data:`TINY_STEP`) under XLA_USE_BF16=1, migrated in amp:
    the setting goes from the recipe (the rest byte for byte, BFM001 fixed there) and t.py gets autocast."""
    (tmp_path / "t.py").write_text(TINY_STEP)
    (tmp_path / "Makefile").write_text(text)
    outcome = migrate_paths([tmp_path], "amp", write=True)
    assert (tmp_path / "Makefile").read_text() == text.replace("XLA_USE_BF16=1 ", "")
    assert ("BFM001", True) in [(d.code, d.fixed) for d in outcome.diagnostics if d.path.endswith("Makefile")]
    assert "torch.autocast" in (tmp_path / "t.py").read_text()
    assert [d.format_text() for d in outcome.diagnostics if not d.fixed] == []  # nothing said left to do by hand


def test_a_recipe_whose_only_make_references_are_its_scripts_arguments_is_migrated(tmp_path):
    """``XLA_USE_BF16=1 python t.py --steps $(STEPS)``: make expands ``$(STEPS)`` into the script's arguments,
    which decide neither the settings nor the script launched, so the line is read (it was refused, BFM131) and
    the reference is kept byte for byte; a ``$`` before the script (``$(PY) t.py``) still is not read."""
    _the_recipe_migrates(
        tmp_path, "STEPS ?= 3\ntrain:\n\tenv PJRT_DEVICE=TPU XLA_USE_BF16=1 python t.py --steps $(STEPS) --out ${OUT}\n"
    )
    from bf16_migrate.carriers.makefile import masked

    assert masked("\tXLA_USE_BF16=1 $(PY) t.py") is None and masked("\tpython t.py $$HOME") is None


def test_a_recipe_launching_the_interpreter_the_makefile_defines_is_migrated(tmp_path):
    """``PYTHON ?= python3`` then ``XLA_USE_BF16=1 $(PYTHON) t.py``: make puts the interpreter the Makefile
    defines there, which runs ``t.py`` with the line's settings; the line is read (it was refused, BFM131), the
    reference kept byte for byte. A variable defined otherwise (several words, appended to, set by a shell
    command) or not defined in the Makefile is not read."""
    from bf16_migrate.carriers.makefile import interpreter_variables, masked

    text = "PYTHON ?= python3\nPY := .venv/bin/python\ntrain:\n\tPJRT_DEVICE=TPU XLA_USE_BF16=1 $(PYTHON) t.py\n"
    _the_recipe_migrates(tmp_path, text)
    assert interpreter_variables(text) == {"PYTHON", "PY"}
    assert masked("\tX=1 ${PY} t.py", frozenset({"PY"})) == "\tX=1 pypy  t.py"
    for other in ("PYTHON = python3 -u", "PYTHON += -u", "PYTHON != which python3", "PYTHON = torchrun"):
        assert "PYTHON" not in interpreter_variables(text + other + "\n"), other


def test_a_config_maps_data_is_reported_naming_the_config_map_and_the_setting(tmp_path):
    """A Kubernetes ConfigMap's ``data`` key is read by pods through ``envFrom``, which is not followed: the
    finding names the ConfigMap and the ``--legacy-env`` setting to migrate its pods' scripts with; the file is
    left as it is, and so is a ConfigMap entry that names no legacy variable."""
    text = (
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: eval-env\ndata:\n  PJRT_DEVICE: TPU\n  XLA_USE_BF16: "1"\n'
    )
    (tmp_path / "cm.yaml").write_text(text)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert (tmp_path / "cm.yaml").read_text() == text
    assert [(d.code, d.line, d.fixed) for d in outcome.diagnostics] == [("BFM131", 7, False)]
    said = outcome.diagnostics[0].message
    assert "ConfigMap `eval-env`" in said and said.endswith("`--legacy-env XLA_USE_BF16=1`"), said


def test_unsupported_kind_is_reported(tmp_path):
    (tmp_path / "tox.ini").write_text("[testenv]\nsetenv =\n    XLA_USE_BF16=1\n")
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert [(d.code, d.line, d.col) for d in outcome.diagnostics] == [("BFM090", 3, 5)]


def test_launched_script_outside_the_given_paths_but_in_the_tree(tmp_path):
    """The launcher is named alone on the command line; the script it starts is found next to it."""
    shutil.copytree(CARRIERS / "shell_if_unset", tmp_path / "t", ignore=shutil.ignore_patterns("expected"))
    (tmp_path / "t" / "src").mkdir()
    shutil.copyfile(CARRIERS.parent / "project" / "src" / "train.py", tmp_path / "t" / "src" / "train.py")
    outcome = migrate_paths([tmp_path / "t" / "train.sh"], "gpu-compatible", write=True)
    assert not outcome.errors
    assert "with_fp32_master_weights" in (tmp_path / "t" / "src" / "train.py").read_text()


def test_a_script_the_codemod_cannot_migrate_keeps_its_launcher(tmp_path):
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\npython prep.py\n")
    (tmp_path / "prep.py").write_text('import torch\nprint(torch.ones(2, device="xla"))\n')
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert (tmp_path / "run.sh").read_text() == "export XLA_USE_BF16=1\npython prep.py\n"
    codes = {(Path(d.path).name, d.code) for d in outcome.diagnostics}
    assert ("run.sh", "BFM112") in codes and ("prep.py", "BFM010") in codes


def test_a_script_that_never_imports_torch_is_not_a_target(tmp_path):
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=0\npython tools.py\n")
    (tmp_path / "tools.py").write_text("print('hi')\n")
    outcome = migrate_paths([tmp_path], "amp", write=True)
    assert (tmp_path / "run.sh").read_text() == "python tools.py\n"
    assert [d.code for d in outcome.diagnostics] == ["BFM002"]


@pytest.mark.parametrize(
    "text, line, said",
    [
        ("export XLA_USE_BF16=1\npython train.py &f { export XLA_USE_BF16=1; }\n", 2, "unexpected token `}'"),
        (
            '#!/bin/bash\nif [ -n "$X" ]; then\n  export XLA_USE_BF16=1\nfi\nelse\npython train.py\n',
            5,
            "unexpected token `else'",
        ),
    ],
)
def test_a_shell_script_bash_rejects_is_an_error_not_a_rewrite(text, line, said):
    """tree-sitter-bash recovers from these without an ERROR node; bash -n is the judge."""
    from bf16_migrate.carriers import CarrierError, analyze

    with pytest.raises(
        CarrierError, match=rf"^run\.sh:{line}:1: cannot parse as a shell script: bash -n says: .*{re.escape(said)}"
    ):
        analyze("shell", text, "run.sh")


@pytest.mark.parametrize(
    "text, line",
    [
        ("env:\n  - name: XLA_USE_BF16\n    value: '1'\nenv: {XLA_USE_BF16: '1'}\n", 4),
        (
            "services:\n  train:\n    command: python train.py\n    environment:\n"
            "      XLA_USE_BF16: '1'\n    command: [python, t.py]\n",
            6,
        ),
    ],
)
def test_a_yaml_file_with_a_duplicate_key_is_an_error_not_a_rewrite(text, line):
    """YAML 1.2: the keys of a mapping are unique (ruamel.yaml's composer does not check it)."""
    from bf16_migrate.carriers import CarrierError, analyze

    with pytest.raises(CarrierError, match=rf"^job\.yaml:{line}:\d+: not valid YAML: duplicate key"):
        analyze("yaml", text, "job.yaml")


def test_a_launcher_kept_for_a_script_refused_by_an_op_without_a_bf16_kernel_says_so(tmp_path):
    """The launched script keeps the switch for an op without a bf16 kernel (BFM155): the launcher's BFM112 gives
    that reason, not "the codemod made no change" (a hunt's CTC Dockerfile, whose script's findings the tree run
    did not print)."""
    (tmp_path / "run.sh").write_text("#!/bin/bash\nXLA_USE_BF16=1 python train.py\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch_xla\n\n\ndef main():\n    device = torch_xla.device()\n"
        "    model = torch.nn.Linear(4, 4).to(device)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for _ in range(3):\n        f = model(torch.randn(8, 4).to(device))\n"
        "        loss = torch.linalg.cholesky(f.T @ f + torch.eye(4, device=device)).diagonal().log().sum()\n"
        "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n\n\nmain()\n"
    )
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    kept = [d for d in outcome.diagnostics if d.code == "BFM112"]
    assert kept and "BFM155" in kept[0].message and "made no change" not in kept[0].message, kept
    assert (tmp_path / "run.sh").read_text() == "#!/bin/bash\nXLA_USE_BF16=1 python train.py\n"


def test_a_docker_env_file_named_from_the_launchers_own_directory_is_its_launch_setting(tmp_path):
    """``docker run --env-file "$(dirname "$0")/xla.env" ... python3 train.py``: the env file the launcher loads
    from its own directory (the shell idiom :mod:`bf16_migrate.carriers.shell.expand` reads for ``source``) sets
    the script's switch. It was taken for a file that reaches no script (BFM110: a hunt's untrue refusal); the
    setting is replaced where it is, and the script migrated for it."""
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch_xla\n\ndevice = torch_xla.device()\nmodel = torch.nn.Linear(2, 2).to(device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel(torch.randn(4, 2).to(device)).sum().backward()\n"
        "opt.step()\n"
    )
    (tmp_path / "xla.env").write_text("PJRT_DEVICE=TPU\nXLA_USE_BF16=1\n")
    (tmp_path / "run.sh").write_text(
        '#!/bin/sh\ndocker run --rm --env-file "$(dirname "$0")/xla.env" -v "$PWD":/w -w /w img python3 train.py\n'
    )
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert not [d for d in outcome.diagnostics if d.code == "BFM110"], outcome.diagnostics
    assert (tmp_path / "xla.env").read_text() == "PJRT_DEVICE=TPU\nNEURON_RT_STOCHASTIC_ROUNDING_EN=1\n"
    assert "model.to(torch.bfloat16)" in (tmp_path / "train.py").read_text()


def test_a_launchers_false_value_stays_with_the_other_variables_setting_it_keeps(tmp_path):
    """``export XLA_USE_BF16=0`` beside ``export XLA_DOWNCAST_BF16=1`` of a script that cannot take the change: the
    DOWNCAST setting stays (BFM112), and so does the ``0`` (BFM002 ``kept_with``), which keeps a value inherited from
    the caller from switching both on (f64 then bf16, not float32: a NeMo launcher's shape, found on real code). With
    a script that takes the change, both go."""
    launcher = "#!/bin/bash\nexport XLA_USE_BF16=0\nexport XLA_DOWNCAST_BF16=1\npython t.py\n"
    (tmp_path / "run.sh").write_text(launcher)
    # a trainer whose model the codemod cannot find (built and trained by a framework): it keeps the switch (BFM010)
    (tmp_path / "t.py").write_text("import torch_xla\nfrom trainer import fit\n\nfit(device=torch_xla.device())\n")
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert (tmp_path / "run.sh").read_text() == launcher
    kept = next(d for d in outcome.diagnostics if d.code == "BFM002")
    assert (kept.line, kept.fixed) == (2, False) and "same branch as XLA_DOWNCAST_BF16=1 (line 3)" in kept.message
    (tmp_path / "t.py").write_text(TINY_STEP)
    outcome = migrate_paths([tmp_path], "amp", write=True)
    assert "XLA_" not in (tmp_path / "run.sh").read_text()
    assert ("BFM002", True) in [(d.code, d.fixed) for d in outcome.diagnostics]
