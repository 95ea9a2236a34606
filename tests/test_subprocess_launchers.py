"""A Python launcher that starts a script of the tree in a process of its own with the legacy switch
in the environment it hands it (``subprocess.run([sys.executable, "train.py"], env={**os.environ,
"XLA_USE_BF16": "1"})``): the script is migrated under that setting, exactly as ``--legacy-env``
migrates it, and the launcher's entry goes the way a shell launcher's does (stochastic: renamed
``NEURON_RT_STOCHASTIC_ROUNDING_EN``; gpu-compatible and amp: removed, the mapping kept valid). What
cannot be followed (a computed value, a command run through a shell, a script that cannot take the
change, the same script also started without the setting) keeps the switch with its finding.
The fixtures are written here. No torch.
"""

from __future__ import annotations

from pathlib import Path

import libcst
import pytest

from bf16_migrate.project import migrate_paths
from bf16_migrate.python import migrate_source

TRAIN = (
    "import torch\nimport torch_xla\n\n\n"
    "def main():\n    device = torch_xla.device()\n    model = torch.nn.Linear(4, 2).to(device)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for _ in range(3):\n"
    "        x = torch.randn(8, 4).to(device)\n        loss = model(x).sum()\n        loss.backward()\n"
    "        opt.step()\n\n\nif __name__ == '__main__':\n    main()\n"
)
NO_MODEL = "import torch\nimport torch_xla\n\nprint(torch.ones(2, device=torch_xla.device()))\n"
HEAD = "import os\nimport subprocess\nimport sys\n\n"

# each launcher form: its text with {entry} where the setting is, and that entry in each mode
DISPLAY = (
    HEAD + "for lr in (1e-3, 3e-4):\n"
    '    env = {**os.environ, {entry}"PJRT_DEVICE": "TPU"}\n'
    '    subprocess.run([sys.executable, "train.py", "--lr", str(lr)], env=env, check=True)\n'
)
INLINE = (
    HEAD + "subprocess.run(\n"
    '    ["python", "train.py"],\n'
    "    env={\n"
    "        **os.environ,\n"
    "        # the device\n"
    '        "PJRT_DEVICE": "TPU",\n'
    "{entry}"
    "    },\n"
    "    check=True,\n"
    ")\n"
)
KEYWORDS = HEAD + 'subprocess.check_call([sys.executable, "-u", "train.py"], env=dict(os.environ{entry}))\n'
COPY = (
    HEAD + "def main():\n"
    "    env = os.environ.copy()\n"
    "{entry}"
    '    env["PJRT_DEVICE"] = "TPU"\n'
    '    subprocess.Popen([sys.executable, "train.py"], env=env).wait()\n\n\n'
    "main()\n"
)
# the copy given other variables by the dict's own methods (a hunt's launcher set a default device this way: refused)
DEFAULTS = (
    HEAD + "def main():\n"
    "    env = os.environ.copy()\n"
    '    env.setdefault("PJRT_DEVICE", "TPU")\n'
    "{entry}"
    '    env.pop("CUDA_VISIBLE_DEVICES", None)\n'
    '    env.update({"XLA_FLAGS": "--xla_dump_to=/tmp/hlo"}, TPU_NAME="local")\n'
    '    subprocess.Popen([sys.executable, "train.py"], env=env).wait()\n\n\n'
    "main()\n"
)
BESIDE = (
    HEAD + "here = os.path.dirname(os.path.abspath(__file__))\n"
    'cmd = [sys.executable, os.path.join(here, "train.py"), "--steps", "3"]\n'
    "cmd += sys.argv[1:]\n"
    'subprocess.run(cmd, env={**os.environ, {entry}"PJRT_DEVICE": "TPU"})\n'
)
UNION = HEAD + 'subprocess.run([sys.executable, "train.py"], env=os.environ | {{entry}"PJRT_DEVICE": "TPU"})\n'
SR = "NEURON_RT_STOCHASTIC_ROUNDING_EN"
FORMS = {
    "union": (UNION, '"XLA_USE_BF16": "1", ', f'"{SR}": "1", '),
    "display": (DISPLAY, '"XLA_USE_BF16": "1", ', f'"{SR}": "1", '),
    "inline": (
        INLINE,
        '        "XLA_USE_BF16": "1",  # bf16 for the child\n',
        f'        "{SR}": "1",  # bf16 for the child\n',
    ),
    "keywords": (KEYWORDS, ', XLA_USE_BF16="1"', f', {SR}="1"'),
    "copy": (COPY, '    env["XLA_USE_BF16"] = "1"\n', f'    env["{SR}"] = "1"\n'),
    "defaults": (DEFAULTS, '    env["XLA_USE_BF16"] = "1"\n', f'    env["{SR}"] = "1"\n'),
    "beside": (BESIDE, '"XLA_USE_BF16": "1", ', f'"{SR}": "1", '),
}
CHANGE = {
    "stochastic": "model.to(torch.bfloat16)",
    "gpu-compatible": "with_fp32_master_weights",
    "amp": 'torch.autocast("xla", dtype=torch.bfloat16)',
}


def _tree(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _launcher(form: str, entry: str) -> str:
    return FORMS[form][0].replace("{entry}", entry)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("mode", sorted(CHANGE))
def test_the_launched_script_takes_the_change_and_the_entry_goes(mode, form, tmp_path):
    _, legacy, renamed = FORMS[form]
    tree = _tree(tmp_path, **{"launch.py": _launcher(form, legacy), "train.py": TRAIN})
    outcome = migrate_paths([tree], mode, write=True)
    launch, train = (tree / "launch.py").read_text(), (tree / "train.py").read_text()
    assert launch == _launcher(form, renamed if mode == "stochastic" else "")
    expected = migrate_source(TRAIN, mode, str(tree / "train.py"), launched_with={"XLA_USE_BF16": "1"}).code
    assert train == expected and CHANGE[mode] in train
    for text in (launch, train):
        libcst.parse_module(text)
    fixed = [d for d in outcome.diagnostics if d.path.endswith("launch.py")]
    assert [(d.code, d.fixed) for d in fixed] == [("BFM001", True)]
    assert "train.py now has" in fixed[0].message and "--legacy-env XLA_USE_BF16=1" in fixed[0].message
    assert not [d for d in outcome.diagnostics if not d.fixed]
    again = migrate_paths([tree], mode, write=True)
    assert not again.changed
    assert (tree / "launch.py").read_text() == launch and (tree / "train.py").read_text() == train


def test_the_sweep_of_the_hunt_migrates_whole(tmp_path):
    """dpsgd_func's launcher (bench/unseen/hunt26 gap 3): the command a name bound to a list that grows,
    the script joined to the launcher's directory, the setting among others in a loop."""
    launcher = (
        HEAD + "def main():\n"
        "    here = os.path.dirname(os.path.abspath(__file__))\n"
        "    for noise in (0.8, 1.1):\n"
        '        cmd = [sys.executable, os.path.join(here, "train.py"), "--noise", str(noise)]\n'
        "        cmd += sys.argv[1:]\n"
        '        env = {**os.environ, "XLA_USE_BF16": "1", "PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU")}\n'
        "        subprocess.run(cmd, env=env)\n\n\nmain()\n"
    )
    tree = _tree(tmp_path, **{"launch.py": launcher, "train.py": TRAIN})
    migrate_paths([tree], "stochastic", write=True)
    assert (tree / "launch.py").read_text() == launcher.replace("XLA_USE_BF16", SR)
    assert CHANGE["stochastic"] in (tree / "train.py").read_text()


def test_an_environment_that_sets_stochastic_rounding_already_loses_the_switch_only(tmp_path):
    launcher = HEAD + f'subprocess.run(["python", "train.py"], env={{"{SR}": "1", "XLA_USE_BF16": "1"}})\n'
    tree = _tree(tmp_path, **{"launch.py": launcher, "train.py": TRAIN})
    migrate_paths([tree], "stochastic", write=True)
    assert (tree / "launch.py").read_text() == HEAD + f'subprocess.run(["python", "train.py"], env={{"{SR}": "1"}})\n'


def _kept(tmp_path: Path, launcher: str, train: str = TRAIN) -> list:
    """The run of ``launcher`` with ``train``: nothing changes; the launcher's findings, all unfixed."""
    tree = _tree(tmp_path, **{"launch.py": launcher, "train.py": train})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert not outcome.changed
    assert (tree / "launch.py").read_text() == launcher and (tree / "train.py").read_text() == train
    found = [d for d in outcome.diagnostics if d.path.endswith("launch.py")]
    assert found and not any(d.fixed for d in found)
    return found


def test_a_computed_value_is_kept(tmp_path):
    launcher = HEAD + 'flag = sys.argv[1]\nsubprocess.run(["python", "train.py"], env={"XLA_USE_BF16": flag})\n'
    found = _kept(tmp_path, launcher)
    assert [d.code for d in found] == ["BFM042"] and "starts train.py with" in found[0].message


def test_a_command_run_through_a_shell_is_kept(tmp_path):
    launcher = HEAD + 'subprocess.run("python train.py", shell=True, env={**os.environ, "XLA_USE_BF16": "1"})\n'
    found = _kept(tmp_path, launcher)
    assert [d.code for d in found] == ["BFM042"]


def test_a_script_that_cannot_take_the_change_keeps_the_switch(tmp_path):
    launcher = HEAD + 'subprocess.run([sys.executable, "train.py"], env={**os.environ, "XLA_USE_BF16": "1"})\n'
    found = _kept(tmp_path, launcher, NO_MODEL)
    assert [d.code for d in found] == ["BFM042"]
    assert "train.py cannot take the change under it" in found[0].message and "BFM010" in found[0].message


def test_a_script_also_started_without_the_setting_is_kept(tmp_path):
    """The fp32 run of a comparison would become bf16: neither launch is followed."""
    launcher = HEAD + (
        'subprocess.run([sys.executable, "train.py"], env={**os.environ, "XLA_USE_BF16": "1"})\n'
        'subprocess.run([sys.executable, "train.py"])\n'
    )
    assert [d.code for d in _kept(tmp_path, launcher)] == ["BFM042"]


def test_an_environment_changed_elsewhere_is_kept(tmp_path):
    launcher = HEAD + (
        "env = dict(os.environ)\n"
        'env["XLA_USE_BF16"] = "1"\n'
        "env.update(load_more())\n"
        'subprocess.run([sys.executable, "train.py"], env=env)\n'
    )
    assert [d.code for d in _kept(tmp_path, launcher)] == ["BFM042"]


@pytest.mark.parametrize(
    "change", ['env.setdefault("XLA_USE_BF16", "1")', 'env.update({"XLA_USE_BF16": "1"})', "env.update(extra)"]
)
def test_an_environment_given_the_switch_or_unknown_keys_by_a_dict_method_is_kept(tmp_path, change):
    """A dict method that names a legacy variable (a default the parent's environment may override) or keys the code
    does not show is not followed: the launch is kept, as an environment changed elsewhere is."""
    launcher = HEAD + (
        "extra = {}\nenv = dict(os.environ)\n"
        'env["XLA_DOWNCAST_BF16"] = "1"\n'
        f"{change}\n"
        'subprocess.run([sys.executable, "train.py"], env=env)\n'
    )
    found = _kept(tmp_path, launcher)  # the launch kept; a legacy variable the method names is reported where it is
    assert {d.code for d in found} == {"BFM042"} and any("starts train.py with" in d.message for d in found)


def test_a_script_not_in_the_tree_is_kept(tmp_path):
    launcher = HEAD + 'subprocess.run([sys.executable, "elsewhere.py"], env={**os.environ, "XLA_USE_BF16": "1"})\n'
    found = _kept(tmp_path, launcher)
    assert [d.code for d in found] == ["BFM042"] and "elsewhere.py" in found[0].message


# a training job started elsewhere: a SageMaker estimator runs `entry_point` from `source_dir` with `environment`
ESTIMATOR = (
    "from sagemaker.pytorch import PyTorch\n\n"
    "{bind}"
    "estimator = PyTorch(\n"
    '    entry_point="train.py",\n'
    '    source_dir="src",\n'
    '    instance_type="ml.trn1.2xlarge",\n'
    "    environment={env},\n"
    ")\n"
    "estimator.fit()\n"
)
JOB_ENVS = {
    "inline": ("", '{{"NEURON_CC_FLAGS": "-O1", {entry}}}'),
    "held": ('job_env = {{"NEURON_CC_FLAGS": "-O1", {entry}}}\n\n', "job_env"),
}


def _estimator(form: str, entry: str) -> str:
    bind, env = JOB_ENVS[form]
    return ESTIMATOR.replace("{bind}", bind.format(entry=entry)).replace("{env}", env.format(entry=entry))


@pytest.mark.parametrize("form", sorted(JOB_ENVS))
@pytest.mark.parametrize("mode", sorted(CHANGE))
def test_a_training_jobs_script_takes_the_change_and_its_environment_loses_the_switch(mode, form, tmp_path):
    """``PyTorch(entry_point="train.py", source_dir="src", environment={..., "XLA_USE_BF16": "1"})`` runs
    src/train.py with the switch (the SageMaker Python SDK's docs): the script is migrated under it, as a process
    launcher's is, and the entry goes (stochastic: NEURON_RT_STOCHASTIC_ROUNDING_EN in its place). It was refused
    (BFM042): the environment was no write the codemod could rewrite."""
    (tmp_path / "src").mkdir()
    legacy = _estimator(form, '"XLA_USE_BF16": "1"')
    tree = _tree(tmp_path, **{"launch_job.py": legacy, "src/train.py": TRAIN})
    outcome = migrate_paths([tree], mode, write=True)
    launch, train = (tree / "launch_job.py").read_text(), (tree / "src" / "train.py").read_text()
    assert launch == _estimator(form, f'"{SR}": "1"' if mode == "stochastic" else "").replace(", }", "}"), launch
    expected = migrate_source(TRAIN, mode, str(tree / "src" / "train.py"), launched_with={"XLA_USE_BF16": "1"}).code
    assert train == expected and CHANGE[mode] in train
    libcst.parse_module(launch)
    assert not [d for d in outcome.diagnostics if not d.fixed]
    again = migrate_paths([tree], mode, write=True)
    assert not again.changed


@pytest.mark.parametrize(
    ("entry_point", "why"),
    [
        ("sys.argv[1]", "is not a string"),
        ('"s3://bucket/code/train.py"', "in source_dir='src' is no Python script of the tree"),
    ],
)
def test_a_training_job_whose_script_cannot_be_read_is_kept(tmp_path, entry_point, why):
    launcher = "import sys\n" + _estimator("inline", '"XLA_USE_BF16": "1"').replace('"train.py"', entry_point)
    (tmp_path / "src").mkdir()
    tree = _tree(tmp_path, **{"launch_job.py": launcher, "src/train.py": TRAIN})
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert not outcome.changed and (tree / "launch_job.py").read_text() == launcher
    found = [d for d in outcome.diagnostics if d.path.endswith("launch_job.py")]
    assert [(d.code, d.fixed) for d in found] == [("BFM042", False)], found
    assert "`PyTorch` (line 4)" in found[0].message and why in found[0].message, found[0].message
