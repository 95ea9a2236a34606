"""A module that sets the legacy switch for the scripts that import it (``env_setup.py``).

The scripts among the paths that import it are migrated as launched with its settings, and its
writes go (stochastic: NEURON_RT_STOCHASTIC_ROUNDING_EN in their place) only when every one of
them takes the change; otherwise nothing changes and the finding names the script that cannot be
migrated. verify takes the module's settings as the legacy run's. No torch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths
from bf16_migrate.python import migrate_source
from bf16_migrate.rules import mode_named
from bf16_migrate.verify import _implied_legacy_env

ENV = (
    '"""Runtime settings."""\nimport os\n\n'
    'os.environ.setdefault("PJRT_DEVICE", "TPU")\nos.environ.setdefault("XLA_USE_BF16", "1")\n'
)
TRAIN = (
    "import env_setup  # noqa: F401\n\nimport torch\nimport torch_xla\n\n\n"
    "def main():\n    device = torch_xla.device()\n    model = torch.nn.Linear(4, 2).to(device)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for _ in range(3):\n"
    "        x = torch.randn(8, 4).to(device)\n        loss = model(x).sum()\n        loss.backward()\n"
    "        opt.step()\n\n\nmain()\n"
)
NO_MODEL = "import env_setup  # noqa: F401\n\nimport torch\n\nprint(torch.ones(2))\n"


def _tree(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _codes(outcome) -> list[tuple[str, int, str, bool]]:
    return [(Path(d.path).name, d.line, d.code, d.fixed) for d in outcome.diagnostics]


@pytest.mark.parametrize(
    ("mode", "setting", "change"),
    [
        ("stochastic", 'os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")\n', "model.to(torch.bfloat16)"),
        ("gpu-compatible", "", "with_fp32_master_weights"),
        ("amp", "", 'torch.autocast("xla", dtype=torch.bfloat16)'),
    ],
)
def test_the_importers_take_the_change_and_the_module_loses_the_switch(mode, setting, change, tmp_path):
    tree = _tree(tmp_path, **{"env_setup.py": ENV, "train.py": TRAIN})
    outcome = migrate_paths([tree], mode, write=True)
    env = (tree / "env_setup.py").read_text()
    assert "XLA_USE_BF16" not in env and 'os.environ.setdefault("PJRT_DEVICE", "TPU")\n' in env
    assert env.endswith('"TPU")\n' + setting)
    assert change in (tree / "train.py").read_text()
    assert ("env_setup.py", 5, "BFM001", True) in _codes(outcome)
    assert not [c for c in _codes(outcome) if c[2] == "BFM010"]
    again = migrate_paths([tree], mode, write=True)
    assert not again.changed and (tree / "env_setup.py").read_text() == env


def test_an_importer_that_cannot_be_migrated_keeps_the_switch_for_all(tmp_path):
    """``tool.py`` imports the module too and builds no model: removing the switch would change what
    it computes with no code taking its place, so nothing changes and the finding names it."""
    tree = _tree(tmp_path, **{"env_setup.py": ENV, "train.py": TRAIN, "tool.py": NO_MODEL})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert (tree / "env_setup.py").read_text() == ENV and (tree / "train.py").read_text() == TRAIN
    found = [d for d in outcome.diagnostics if d.code == "BFM010" and d.path.endswith("env_setup.py")]
    assert len(found) == 1 and "tool.py imports it and cannot be migrated" in found[0].message


def test_a_module_nobody_imports_keeps_its_finding(tmp_path):
    tree = _tree(tmp_path, **{"env_setup.py": ENV})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert (tree / "env_setup.py").read_text() == ENV
    assert ("env_setup.py", 5, "BFM010", False) in _codes(outcome)


def test_verify_takes_the_modules_setting_as_the_legacy_runs(tmp_path):
    tree = _tree(tmp_path, **{"env_setup.py": ENV, "train.py": TRAIN})
    env, sources, module = _implied_legacy_env(
        tree / "train.py", TRAIN, mode_named("stochastic"), {}, [], given_legacy=False
    )
    assert dict(env) == {"XLA_USE_BF16": "1"} and list(sources) == ["env_setup.py, which the script imports"]
    assert module == tree / "env_setup.py"
    given, _, none = _implied_legacy_env(
        tree / "train.py", TRAIN, mode_named("stochastic"), {"XLA_DOWNCAST_BF16": "1"}, [], given_legacy=False
    )
    assert dict(given) == {"XLA_DOWNCAST_BF16": "1"} and none is None  # what the user gives wins


def test_an_importer_outside_the_paths_given_keeps_the_switch(tmp_path):
    """Run on ``env_setup.py`` and ``train.py`` while ``export.py`` beside them imports the module too:
    removing the switch would leave ``export.py`` without it and without a change, so nothing changes."""
    tree = _tree(tmp_path, **{"env_setup.py": ENV, "train.py": TRAIN, "export.py": TRAIN})
    outcome = migrate_paths([tree / "env_setup.py", tree / "train.py"], "stochastic", write=True)
    assert (tree / "env_setup.py").read_text() == ENV and (tree / "train.py").read_text() == TRAIN
    found = [d for d in outcome.diagnostics if d.code == "BFM010"]
    assert len(found) == 1 and "export.py imports it" in found[0].message and "paths given" in found[0].message


def test_a_module_imported_under_the_switch_keeps_its_writes_unless_every_importer_was_migrated():
    """A migrated script's modules are migrated under its settings; an env module's own writes go only
    when the project found every importer migrated (``importers_migrated``)."""
    kept = migrate_source(ENV, "stochastic", "env_setup.py", imported_under={"XLA_USE_BF16": "1"})
    assert kept.code == ENV
    gone = migrate_source(
        ENV, "stochastic", "env_setup.py", imported_under={"XLA_USE_BF16": "1"}, importers_migrated=True
    )
    assert 'os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")' in gone.code


def test_verify_takes_a_packages_init_that_python_m_runs_first(tmp_path):
    """``python -m trainpkg.train`` imports ``trainpkg/__init__.py`` before the script: a package whose
    ``__init__`` sets the switch is the legacy run's setting, though no import names it (verify said
    "nothing to verify"); the migrated run takes the ``__init__``'s migration, the FP32 ones drop its
    writes."""
    from bf16_migrate.verify import _env_module_migrated

    package = tmp_path / "trainpkg"
    package.mkdir()
    (package / "__init__.py").write_text(ENV)
    (package / "data.py").write_text("import torch\n\n\ndef batch():\n    return torch.randn(8, 4)\n")
    train = TRAIN.replace("import env_setup  # noqa: F401\n", "from trainpkg.data import batch  # noqa: F401\n")
    (package / "train.py").write_text(train)
    env, sources, module = _implied_legacy_env(
        package / "train.py", train, mode_named("stochastic"), {}, [], given_legacy=False
    )
    assert dict(env) == {"XLA_USE_BF16": "1"} and module == package / "__init__.py"
    assert module is not None
    assert list(sources) == ["trainpkg/__init__.py, which python -m runs before the script"]
    migrated = _env_module_migrated(module, mode_named("stochastic"), env)
    assert 'os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")' in migrated
    assert '"XLA_USE_BF16"' not in migrated
    alone = tmp_path / "alone.py"  # run by its path: no package, no __init__ runs
    alone.write_text(train)
    assert _implied_legacy_env(alone, train, mode_named("stochastic"), {}, [], given_legacy=False)[2] is None


@pytest.mark.parametrize(
    ("launch", "target"),
    [
        ('runpy.run_path(str(HERE / "es_train.py"), run_name="__main__")', "es_train.py"),
        ('runpy.run_module("trainer.main", run_name="__main__")', "trainer.main"),
    ],
)
def test_a_python_launcher_names_the_script_it_runs(launch, target):
    """A file that sets the switch and runs another script in its own interpreter (runpy): the switch
    stays (bf16-migrate does not follow it) and the finding names that script, where it said "no
    optimizer in this file"."""
    source = (
        "import os\nimport runpy\nfrom pathlib import Path\n\nHERE = Path(__file__).resolve().parent\n"
        f'os.environ.setdefault("XLA_USE_BF16", "1")\n\nif __name__ == "__main__":\n    {launch}\n'
    )
    result = migrate_source(source, "stochastic", "launch.py")
    assert result.code == source
    [finding] = [d for d in result.diagnostics if d.code == "BFM010"]
    assert f"set here for `{target}`, which this file runs in its own interpreter" in finding.message
    assert f"migrate `{target}` with --legacy-env XLA_USE_BF16=1" in finding.message


SETUP = (
    '"""Settings shared by the scripts."""\nimport os\n\n\n'
    'def setup_env():\n    """Call first."""\n    os.environ.setdefault("PJRT_DEVICE", "TPU")\n'
    '    os.environ["XLA_USE_BF16"] = "1"\n\n\ndef batch_size():\n    return 8\n'
)
CALLS = TRAIN.replace("import env_setup  # noqa: F401\n", "from common import setup_env\n\nsetup_env()\n")
IMPORTS_ONLY = NO_MODEL.replace("import env_setup  # noqa: F401\n", "from common import batch_size\n")


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_a_function_that_sets_the_switch_is_followed_to_the_scripts_that_call_it(mode, tmp_path):
    """``common.setup_env()``, called first by the scripts, sets the switch: the scripts that call it are
    migrated under it and its write goes; a script that imports the module for something else (and
    never calls the function) runs without the switch and is left as it is."""
    tree = _tree(tmp_path, **{"common.py": SETUP, "train.py": CALLS, "tool.py": IMPORTS_ONLY})
    outcome = migrate_paths([tree], mode, write=True)
    common = (tree / "common.py").read_text()
    assert "XLA_USE_BF16" not in common and '    os.environ.setdefault("PJRT_DEVICE", "TPU")\n' in common
    rounding = '    os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"\n'
    assert (rounding in common) == (mode == "stochastic")
    train = (tree / "train.py").read_text()
    assert (
        "setup_env()\n" in train
        and ("model.to(torch.bfloat16)" if mode == "stochastic" else "torch.autocast(") in train
    )
    assert (tree / "tool.py").read_text() == IMPORTS_ONLY
    assert ("common.py", 8, "BFM001", True) in _codes(outcome)
    assert not [c for c in _codes(outcome) if c[2] == "BFM010"]
    again = migrate_paths([tree], mode, write=True)
    assert not again.changed


def test_a_setter_nobody_calls_keeps_the_switch(tmp_path):
    """Imported for its other function only, the module's setter never runs: nothing is migrated and
    its finding stays (the switch is not in force for that script)."""
    tree = _tree(tmp_path, **{"common.py": SETUP, "tool.py": IMPORTS_ONLY})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert (tree / "common.py").read_text() == SETUP and (tree / "tool.py").read_text() == IMPORTS_ONLY
    assert ("common.py", 8, "BFM010", False) in _codes(outcome)


def test_an_importer_resolves_to_its_own_directorys_module_first(tmp_path):
    """``from common import setup_env`` in ``variant/train.py`` loads ``variant/common.py`` (the script's
    directory comes first in Python's search), which sets nothing: that script is not the root module's
    importer and is left as it is."""
    tree = _tree(tmp_path, **{"common.py": SETUP, "train.py": CALLS})
    (tree / "variant").mkdir()
    (tree / "variant" / "common.py").write_text(SETUP.replace('    os.environ["XLA_USE_BF16"] = "1"\n', ""))
    (tree / "variant" / "train.py").write_text(CALLS)
    migrate_paths([tree], "stochastic", write=True)
    assert "model.to(torch.bfloat16)" in (tree / "train.py").read_text()
    assert (tree / "variant" / "train.py").read_text() == CALLS


def test_verify_takes_a_setter_the_script_calls_as_the_legacy_runs_setting(tmp_path):
    tree = _tree(tmp_path, **{"common.py": SETUP, "train.py": CALLS, "tool.py": IMPORTS_ONLY})
    env, _, module = _implied_legacy_env(tree / "train.py", CALLS, mode_named("stochastic"), {}, [], given_legacy=False)
    assert dict(env) == {"XLA_USE_BF16": "1"} and module == tree / "common.py"
    none, _, _ = _implied_legacy_env(
        tree / "tool.py", IMPORTS_ONLY, mode_named("stochastic"), {}, [], given_legacy=False
    )
    assert dict(none) == {}


ENTRY = 'import os\n\nos.environ["XLA_USE_BF16"] = "1"\n\nimport train_lib  # noqa: E402\n\ntrain_lib.main(steps=3)\n'
TRAIN_LIB = TRAIN.replace("import env_setup  # noqa: F401\n\n", "").replace("def main():", "def main(steps=3):")
TRAIN_LIB = TRAIN_LIB.replace("range(3)", "range(steps)").removesuffix("\n\nmain()\n") + "\n"


@pytest.mark.parametrize(
    ("mode", "setting", "change"),
    [
        ("stochastic", 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"\n', "model.to(torch.bfloat16)"),
        ("gpu-compatible", None, "with_fp32_master_weights"),
        ("amp", None, 'torch.autocast("xla", dtype=torch.bfloat16)'),
    ],
)
def test_an_entry_that_sets_the_switch_and_hands_over_migrates_the_module_it_runs(mode, setting, change, tmp_path):
    """``main.py`` sets the switch, imports ``train_lib`` and calls its ``main()``: the switch is in force for
    the module, which is migrated as launched with it; the entry's write goes only then (BFM010 before)."""
    tree = _tree(tmp_path, **{"main.py": ENTRY, "train_lib.py": TRAIN_LIB})
    outcome = migrate_paths([tree], mode, write=True)
    entry = (tree / "main.py").read_text()
    assert "XLA_USE_BF16" not in entry and "import train_lib" in entry and "train_lib.main(steps=3)" in entry
    assert (setting in entry) if setting else ("os.environ[" not in entry)
    assert change in (tree / "train_lib.py").read_text()
    assert ("main.py", 3, "BFM001", True) in _codes(outcome)
    assert not [d for d in outcome.diagnostics if not d.fixed]
    compile(entry, "main.py", "exec")
    again = migrate_paths([tree], mode, write=True)
    assert not again.changed and (tree / "main.py").read_text() == entry


def test_an_entry_whose_module_cannot_be_migrated_keeps_the_switch_and_names_it(tmp_path):
    """The module builds its optimizer from parameters no model of its own gives: nothing changes, and the
    entry's finding names the module and why."""
    lib = TRAIN_LIB.replace("model.parameters()", "[p for m in registry() for p in m.parameters()]")
    tree = _tree(tmp_path, **{"main.py": ENTRY, "train_lib.py": lib})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert (tree / "main.py").read_text() == ENTRY and (tree / "train_lib.py").read_text() == lib
    found = [d for d in outcome.diagnostics if d.code == "BFM010" and d.path.endswith("main.py")]
    assert len(found) == 1 and not found[0].fixed
    assert "train_lib.py, which this entry script hands its training to" in found[0].message
    assert "train_lib.py:" in found[0].message


def test_an_entry_that_makes_tensors_itself_is_not_handed_over(tmp_path):
    """A tensor made in the entry after ``main()`` returns would stay float32 once the switch is gone."""
    entry = ENTRY.replace("import os\n", "import os\n\nimport torch\n") + "print(torch.ones(2).sum())\n"
    tree = _tree(tmp_path, **{"main.py": entry, "train_lib.py": TRAIN_LIB})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert (tree / "main.py").read_text() == entry
    assert [d.code for d in outcome.diagnostics if d.path.endswith("main.py") and not d.fixed] == ["BFM010"]


def test_verify_runs_the_module_an_entry_hands_over_to_as_the_rewrite_migrates_it(tmp_path):
    """verify of ``main.py`` stages ``train_lib.py``'s migration for the migrated run (the entry's write gone,
    as the rewrite writes it), and its reference-mode migration for the FP32 run; the entry alone kept the
    switch in the migrated run (a false FAIL: "the migrated run still sees XLA_USE_BF16=1")."""
    from bf16_migrate.verify import _entry_reference, _migrate

    tree = _tree(tmp_path, **{"main.py": ENTRY, "train_lib.py": TRAIN_LIB})
    mode = mode_named("stochastic")
    migrated = _migrate(ENTRY, mode, tree / "main.py")
    assert (
        'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"' in migrated.code and "XLA_USE_BF16" not in migrated.code
    )
    assert list(migrated.modules) == [(tree / "train_lib.py").resolve()]
    assert "model.to(torch.bfloat16)" in migrated.modules[(tree / "train_lib.py").resolve()]
    outcome = migrate_paths([tree], mode, write=False)
    written = {Path(p).name: new for p, (_old, new) in outcome.sources.items()}
    assert written["train_lib.py"] == migrated.modules[(tree / "train_lib.py").resolve()]
    assert written["main.py"] == migrated.code
    reference = _entry_reference(ENTRY, tree / "main.py", mode)
    assert list(reference) == [(tree / "train_lib.py").resolve()]
    assert "bfloat16" not in reference[(tree / "train_lib.py").resolve()]
    lib = TRAIN_LIB.replace("model.parameters()", "[p for m in registry() for p in m.parameters()]")
    (tree / "train_lib.py").write_text(lib)
    kept = _migrate(ENTRY, mode, tree / "main.py")
    assert kept.code == ENTRY and not kept.modules
