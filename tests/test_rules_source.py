"""``rules/`` (at the repository root) is the only place that names the legacy variables and the
modes: a variable rule added there is found end to end (the byte prefilter, the command line's
report and rewrite, the verify child's list of variables), no module of the package spells the
names itself, and the rules are installed as package data (``bf16_migrate/_rules``)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.rules import MODES, RULES_DIR, RULES_DIR_ENV, load_rules, variable_names
from bf16_migrate.verify.runner import HARNESS_DIR, LEGACY_VARIABLES, LEGACY_VARIABLES_ENV, child_env

from conftest import FIXTURES, ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

NEW = "XLA_USE_TEST16"
"""A made-up legacy variable, ruled to do what XLA_USE_BF16 does."""


@pytest.fixture(scope="module")
def new_rules(tmp_path_factory) -> Path:
    """A copy of the rules with one more variable rule, ``XLA_USE_TEST16.toml`` (XLA_USE_BF16's
    rule under another name)."""
    target = tmp_path_factory.mktemp("rules") / "rules"
    shutil.copytree(RULES_DIR, target)
    text = (RULES_DIR / "XLA_USE_BF16.toml").read_text()
    assert 'name = "XLA_USE_BF16"' in text
    (target / f"{NEW}.toml").write_text(text.replace('name = "XLA_USE_BF16"', f'name = "{NEW}"'))
    return target


def _env(rules: Path | None) -> dict[str, str]:
    """This environment without bf16-migrate's own variables, plus the rules directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BF16_MIGRATE")}
    if rules is not None:
        env[RULES_DIR_ENV] = str(rules)
    return env


def _python(code: str, rules: Path | None, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=_env(rules), capture_output=True, text=True, timeout=300
    )


def _cli(args: list[str], rules: Path | None, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *args],
        cwd=cwd,
        env=_env(rules),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tree(where: Path, variable: str) -> Path:
    """A launcher that sets ``variable`` and the training script it starts, which sets it too
    (``fixtures/mlp_regression``), beside a file that names nothing."""
    where.mkdir(parents=True)
    (where / "run.sh").write_text(f"#!/bin/bash\nexport {variable}=1\npython train.py --steps 5\n")
    (where / "train.py").write_text(
        (FIXTURES / "mlp_regression" / "train.py").read_text().replace("XLA_USE_BF16", variable)
    )
    (where / "clean.py").write_text("import os\n")
    return where


def test_the_lists_come_from_the_rules_directory():
    assert (RULES_DIR / "modes.toml").is_file() and (RULES_DIR / "XLA_USE_BF16.toml").is_file()
    assert variable_names() == tuple(sorted(load_rules().variables)) == LEGACY_VARIABLES
    assert MODES == tuple(tomllib.loads((RULES_DIR / "modes.toml").read_text())) == tuple(load_rules().modes)


def test_a_new_variable_rule_is_found_by_the_prefilter(new_rules, tmp_path):
    tree = _tree(tmp_path / "tree", NEW)
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from bf16_migrate import rules, scan\n"
        f"found = sorted(c.path.name for c in scan.scan([Path({str(tree)!r})]))\n"
        "print(json.dumps({'names': rules.variable_names(), 'loaded': sorted(rules.load_rules().variables),"
        " 'markers': [m.decode() for m in scan.LEGACY_MARKERS], 'found': found,"
        " 'libcst': 'libcst' in sys.modules}))\n"
    )
    result = _python(code, new_rules, tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert NEW in seen["names"] and NEW in seen["loaded"] and NEW in seen["markers"]
    assert seen["found"] == ["run.sh", "train.py"] and not seen["libcst"]
    # the stock rules do not know the name: the same tree names nothing
    result = _python(code, None, tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert NEW not in seen["names"] and seen["found"] == []


def test_a_new_variable_rule_is_reported_and_migrated_like_the_one_it_copies(new_rules, tmp_path):
    tree = _tree(tmp_path / "check", NEW)
    check = _cli([".", "--check"], new_rules, tree)
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"run.sh:2:8: BFM001 would replace {NEW} by NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in check.stdout
    assert f"train.py:8:12: BFM001 would replace {NEW}" in check.stdout
    assert "2 file(s) would change" in check.stderr
    # without the rule, nothing names a legacy variable
    unknown = _cli([".", "--check"], None, tree)
    assert unknown.returncode == 0 and "(0 file(s) name a legacy variable)" in unknown.stderr, (
        unknown.stdout + unknown.stderr
    )
    # written, in every mode: the very change the stock rules make for XLA_USE_BF16, name for name
    for mode in MODES:
        new = _tree(tmp_path / mode / "new", NEW)
        stock = _tree(tmp_path / mode / "stock", "XLA_USE_BF16")
        for where, rules in ((new, new_rules), (stock, None)):
            result = _cli([".", "--mode", mode, "-q"], rules, where)
            assert result.returncode in (0, 1), result.stdout + result.stderr
        for name in ("run.sh", "train.py"):
            migrated = (new / name).read_text()
            assert migrated != (tmp_path / "check" / name).read_text(), (mode, name)
            assert migrated == (stock / name).read_text().replace("XLA_USE_BF16", NEW), (mode, name)
            assert f"{NEW}=1" not in migrated and f'"{NEW}"] = "1"' not in migrated, (mode, name)


def test_the_verify_child_gets_the_new_variable(new_rules, tmp_path):
    code = (
        "import json\n"
        "from pathlib import Path\n"
        "from bf16_migrate.verify.runner import LEGACY_VARIABLES, child_env\n"
        "base = {'PATH': '/bin', 'XLA_USE_TEST16': '1', 'XLA_USE_BF16': '1'}\n"
        "migrated = child_env(base, Path('.'), record=Path('r.json'), steps=1, drop=LEGACY_VARIABLES)\n"
        "print(json.dumps({'variables': LEGACY_VARIABLES, 'migrated': migrated}))\n"
    )
    result = _python(code, new_rules, tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert NEW in seen["variables"]
    migrated = seen["migrated"]
    assert NEW not in migrated and "XLA_USE_BF16" not in migrated  # the migrated run has none of them
    assert migrated[LEGACY_VARIABLES_ENV].split(",") == seen["variables"]
    # the harness (which never imports bf16_migrate) reads its list from that variable
    harness = {**_env(None), LEGACY_VARIABLES_ENV: migrated[LEGACY_VARIABLES_ENV], "PYTHONPATH": str(HARNESS_DIR)}
    code = "import json, sys; print(json.dumps(sys.modules['sitecustomize']._LEGACY_VARIABLES))"
    out = subprocess.run([sys.executable, "-c", code], env=harness, capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == seen["variables"]


def test_the_stock_child_environment_names_the_stock_variables(tmp_path):
    env = child_env(
        {"PATH": "/bin", LEGACY_VARIABLES_ENV: "LEFT_BY_AN_ENCLOSING_RUN"},
        tmp_path,
        record=tmp_path / "r.json",
        steps=1,
    )
    assert env[LEGACY_VARIABLES_ENV] == ",".join(variable_names())


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_verify_child_records_the_new_variable(new_rules, tmp_path):
    """The legacy run's record keeps the value of the new variable (torch on the CPU, no XLA)."""
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Linear(2, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(2):\n"
        "    optimizer.zero_grad()\n"
        "    model(torch.ones(1, 2)).sum().backward()\n"
        "    optimizer.step()\n"
    )
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from bf16_migrate.verify.runner import child_env\n"
        f"env = child_env({{'PATH': '/usr/bin:/bin'}}, Path({str(tmp_path)!r}), "
        f"record=Path({str(tmp_path / 'r.json')!r}), steps=0, add={{{NEW!r}: '1'}})\n"
        "print(json.dumps(env))\n"
    )
    result = _python(code, new_rules, tmp_path)
    assert result.returncode == 0, result.stderr
    env = {**_env(None), **json.loads(result.stdout)}
    env.pop(RULES_DIR_ENV, None)
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["steps"] == 2 and record["legacy_env"] == {NEW: "1"}, record


def _names_in(source: str, names: set[str]) -> list[tuple[int, str]]:
    """The string and bytes constants of ``source`` outside docstrings that are a variable's name
    or name two or more variables (a list or a pattern spelled out), with their line."""
    tree = ast.parse(source)
    docstrings = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and id(node) not in docstrings:
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if text in names or len({name for name in names if name in text}) > 1:
                found.append((node.lineno, text))
    return found


def test_no_module_spells_the_variable_names():
    """Only ``rules/`` names the variables: the package and the benchmarks derive every list
    from it (a message or a docstring may still name one as an example)."""
    names = set(variable_names())
    modules = [p for p in sorted((ROOT / "bf16_migrate").rglob("*.py")) if p != ROOT / "bf16_migrate" / "rules.py"]
    modules += sorted((ROOT / "bench").glob("*.py"))
    assert len(modules) > 30
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
        for path in modules
        for line, text in _names_in(path.read_text(), names)
    ]
    assert found == []
    # what the check catches, and what it lets through
    spelled = (
        '"""Mentions XLA_USE_BF16 and XLA_USE_FP16 in a docstring."""\n'
        'LEGACY = ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")\n'
        'MARKER = b"XLA_USE_FP16"\n'
        'PATTERN = "XLA_USE_BF16|XLA_DOWNCAST_BF16"\n'
        'HINT = "pass --legacy-env XLA_USE_BF16=1"\n'
    )
    assert sorted(line for line, _ in _names_in(spelled, names)) == [2, 2, 3, 4]


def test_every_package_is_listed_for_installation():
    """pyproject.toml lists the packages (a package-dir mapping puts rules/ at bf16_migrate/_rules,
    which packages.find cannot): a new subpackage must be added there."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "bf16_migrate").rglob("__init__.py")}
    assert set(config["packages"]) == on_disk | {"bf16_migrate._rules"}
    assert config["package-dir"] == {"bf16_migrate._rules": "rules"}
    assert config["package-data"]["bf16_migrate._rules"] == ["*.toml"]


def test_an_installed_copy_reads_its_package_data(tmp_path):
    """The layout ``pip install .`` installs (setuptools' build_py, which a wheel build runs):
    the rules are ``bf16_migrate/_rules/*.toml``, and the installed package reads them there."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copyfile(ROOT / name, source / name)
    shutil.copytree(ROOT / "bf16_migrate", source / "bf16_migrate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", source / "rules")
    lib = tmp_path / "lib"
    # the setuptools pyproject.toml's build-system asks for (its SPDX `license` string needs 77 or
    # newer), in an environment of its own, as pip's isolated build would use
    builder = tmp_path / "builder"
    subprocess.run([sys.executable, "-m", "venv", str(builder)], check=True, capture_output=True, timeout=300)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    pip = [str(builder / "bin" / "python"), "-m", "pip", "install", "-q", *requires]
    subprocess.run(pip, check=True, capture_output=True, timeout=600)
    subprocess.run(
        [
            str(builder / "bin" / "python"),
            "-c",
            "from setuptools import setup; setup()",
            "-q",
            "build_py",
            "-d",
            str(lib),
        ],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert sorted(p.name for p in (lib / "bf16_migrate" / "_rules").iterdir()) == sorted(
        p.name for p in RULES_DIR.iterdir() if p.suffix == ".toml"
    )
    assert sorted(p.name for p in lib.iterdir()) == ["bf16_migrate"]
    # -S: no site-packages, so not the editable install of this checkout
    code = (
        f"import sys; sys.path.insert(0, {str(lib)!r})\n"
        "from bf16_migrate import rules, scan\n"
        "print(rules.RULES_DIR, ','.join(rules.MODES), len(scan.LEGACY_MARKERS), len(rules.load_rules().diagnostics))\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=_env(None), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    where, modes, markers, codes = result.stdout.split()
    assert Path(where) == lib / "bf16_migrate" / "_rules"
    assert (
        modes == ",".join(MODES)
        and int(markers) == len(variable_names())
        and int(codes) == len(load_rules().diagnostics)
    )


MADE_UP_MODE = "bf16-plain"
"""A made-up mode: the model cast to bf16 with its inputs, and nothing else (no stochastic
rounding, no master weights, no FP32 loss accumulator)."""


@pytest.fixture(scope="module")
def mode_rules(tmp_path_factory) -> Path:
    """A copy of the rules with one more mode in ``modes.toml``."""
    target = tmp_path_factory.mktemp("rules") / "rules"
    shutil.copytree(RULES_DIR, target)
    with (target / "modes.toml").open("a") as f:
        f.write(
            f"\n[{MADE_UP_MODE}]\n"
            'summary = "model cast to torch.bfloat16 alone"\n'
            'emit = ["model-cast", "input-cast"]\n'
            'by_hand = "cast the model by hand"\n'
            'script_change = "the model cast alone"\n'
            f"\n[{MADE_UP_MODE}.verify]\n"
            'baseline = "legacy"\n'
            'onset_kind = "median"\n'
            "onset_steps = 5\n"
            "onset_tol = 0.02\n"
            "onset_min = 0\n"
            "drift_factor = 3.0\n"
            "drift_floor = 0.02\n"
            "drift_no_gap = 0.07\n"
            'source = "made up for the test"\n'
        )
    return target


def test_a_new_mode_is_offered_and_emits_what_its_rule_says(mode_rules, tmp_path):
    """Followed from ``--mode`` through the codemod and the launcher's plan: the new mode is a
    choice, casts the model and its floating inputs (as stochastic does), removes the switch
    without stochastic rounding and adds no FP32 loss accumulator; the launcher's finding names
    the mode's own words."""
    assert _cli([".", "--mode", MADE_UP_MODE, "--check"], None, tmp_path).returncode == 2  # unknown to the stock rules
    help_text = _cli(["migrate", "--help"], mode_rules, tmp_path).stdout
    assert MADE_UP_MODE in help_text
    new = _tree(tmp_path / "new", "XLA_USE_BF16")
    stochastic = _tree(tmp_path / "stochastic", "XLA_USE_BF16")
    result = _cli([".", "--mode", MADE_UP_MODE], mode_rules, new)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert _cli([".", "--mode", "stochastic", "-q"], None, stochastic).returncode in (0, 1)
    script, theirs = (new / "train.py").read_text(), (stochastic / "train.py").read_text()
    assert "model.to(torch.bfloat16)" in script and "x.to(torch.bfloat16)" in script
    assert 'os.environ["XLA_USE_BF16"]' not in script and "NEURON_RT_STOCHASTIC_ROUNDING_EN" not in script
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" in theirs
    # the same cast and input lines as stochastic mode's, which also emits model-cast and input-cast
    cast_lines = [line for line in theirs.splitlines() if "torch.bfloat16" in line]
    assert cast_lines and all(line in script.splitlines() for line in cast_lines)
    assert "XLA_USE_BF16=" not in (new / "run.sh").read_text()
    assert "the model cast alone" in result.stdout, result.stdout
    assert "model cast to torch.bfloat16 alone" in result.stdout, result.stdout


def test_a_new_mode_is_verified_with_its_own_table(mode_rules, tmp_path):
    """Followed into verify: the new mode's ``[MODE.verify]`` table is its tolerance, a mode that
    casts the model may add the model cast's compilation, the control run keeps the first
    plain-bf16 mode of the rules, and a migration in the new mode edited by hand is read as one
    from the marks of what it emits (nothing in verify names a mode)."""
    legacy = ROOT / "fixtures" / "mlp_regression" / "train.py"
    probe = (
        "from bf16_migrate.python import migrate_source\n"
        "from bf16_migrate.rules import mode_named\n"
        "from bf16_migrate.verify.compare import mode_tolerance\n"
        "from bf16_migrate.verify.evidence import mode_compile_allowance\n"
        "from bf16_migrate.verify import _plain_bf16_mode\n"
        "from bf16_migrate.verify.tree import detect_mode\n"
        f"new, amp = mode_named({MADE_UP_MODE!r}), mode_named('amp')\n"
        "t = mode_tolerance(new)\n"
        "print(t.baseline, t.onset_kind, t.onset_steps, t.onset_tol, t.drift_factor, t.drift_no_gap, t.source)\n"
        "print(mode_compile_allowance(new), mode_compile_allowance(amp), _plain_bf16_mode())\n"
        f"legacy = open({str(legacy)!r}).read()\n"
        "edited = migrate_source(legacy, new, 'train.py').code + '# reviewed\\n'\n"
        "print(*detect_mode(legacy, edited, 'train.py'))\n"
    )
    env = {**os.environ, RULES_DIR_ENV: str(mode_rules), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "legacy median 5 0.02 3.0 0.07 made up for the test",
        "1 0 stochastic",
        f"{MADE_UP_MODE} read from the migrated text",
    ]
