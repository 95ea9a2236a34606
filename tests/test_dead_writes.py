"""Legacy writes that never took effect, or may not have (BFM049): input script -> expected
output and diagnostics, one case per shape of property (f) in ``test_properties.py``.

torch-xla reads XLA_USE_BF16 / XLA_DOWNCAST_BF16 when the first tensor goes to the device. A
write taken back before that (``del``, ``pop``, ``unsetenv``, a ``"0"`` write) never took
effect: the legacy script trained in fp32, so the write goes with its undo and nothing is added.
Where that cannot be told (a lambda, a function nothing calls, or calls too late or under a
flag, a write after the training), the switch is kept and reported. A write in force only under
a flag is migrated under that flag, or kept and reported when the flag cannot travel to the
model.
"""

from __future__ import annotations

import pytest

from bf16_migrate.python import migrate_source

from conftest import MODES

HEAD = "import os\n\nimport torch\nimport torch.nn as nn\nimport torch_xla.core.xla_model as xm\n"
TRAIN = """

def train():
    device = xm.xla_device()
    model = nn.Linear(4, 2).to(device)
{late}    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 4).to(device)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        xm.mark_step()
""".format
MAIN = '\n\nif __name__ == "__main__":\n    train()\n'
NEVER = "never took effect and the script trained in fp32; nothing added"
ADD_BY_HAND = "(migrating to bf16 would change its numerics: add the mode's code by hand and run `bf16-migrate verify`)"
PROBABLY = (
    "torch-xla had read the variable by then, so it probably never took effect, which cannot be told for "
    "sure here; the switch is kept: delete it if the script trained in fp32, else"
)


def migrate(source: str, mode: str):
    result = migrate_source(source, mode, "t.py")
    return result.code, [d.format_text() for d in result.diagnostics]


# -- never in force: removed with the undo, nothing added (the same in every mode) --------------------
DEAD = {
    "del-after": (
        HEAD
        + 'os.environ["XLA_USE_BF16"] = "1"  # tried bf16\ndel os.environ["XLA_USE_BF16"]\n'
        + TRAIN(late="")
        + MAIN,
        HEAD + TRAIN(late="") + MAIN,
        [
            "t.py:6:12: BFM049 XLA_USE_BF16 removed: it is taken back at line 7 (`del "
            f'os.environ["XLA_USE_BF16"]`) before anything used the device, so it {NEVER} {ADD_BY_HAND} '
            "[fixed]",
            "t.py:7:16: BFM044 XLA_USE_BF16 is taken out of the environment here; "
            "once no code sets it this is dead: removed [fixed]",
        ],
    ),
    # an import between the two uses no device; the other key of the update() stays
    "pop-after-update": (
        HEAD + 'os.environ.update({"XLA_DOWNCAST_BF16": "1", "PJRT_DEVICE": "CPU"})\n'
        'import torch_xla\nos.environ.pop("XLA_DOWNCAST_BF16", None)\n' + TRAIN(late="") + MAIN,
        HEAD + 'os.environ.update({"PJRT_DEVICE": "CPU"})\nimport torch_xla\n' + TRAIN(late="") + MAIN,
        [
            "t.py:6:20: BFM049 XLA_DOWNCAST_BF16 removed: it is taken back at line 8 "
            f'(`os.environ.pop("XLA_DOWNCAST_BF16", None)`) before anything used the device, so it {NEVER} '
            f"{ADD_BY_HAND} [fixed]",
            "t.py:8:16: BFM044 XLA_DOWNCAST_BF16 is taken out of the environment here; "
            "once no code sets it this is dead: removed [fixed]",
        ],
    ),
    "unsetenv-after-putenv": (
        HEAD + 'os.putenv("XLA_USE_BF16", "1")\nos.unsetenv("XLA_USE_BF16")\n' + TRAIN(late="") + MAIN,
        HEAD + TRAIN(late="") + MAIN,
        [
            "t.py:6:11: BFM049 XLA_USE_BF16 removed: it is taken back at line 7 "
            f'(`os.unsetenv("XLA_USE_BF16")`) before anything used the device, so it {NEVER} {ADD_BY_HAND} '
            "[fixed]",
            "t.py:7:13: BFM044 XLA_USE_BF16 is taken out of the environment here; "
            "once no code sets it this is dead: removed [fixed]",
        ],
    ),
    "zero-after": (
        HEAD + 'os.environ.setdefault("XLA_USE_BF16", "1")\nos.environ["XLA_USE_BF16"] = "0"\n' + TRAIN(late="") + MAIN,
        HEAD + TRAIN(late="") + MAIN,
        [
            "t.py:6:23: BFM049 XLA_USE_BF16 removed: it is taken back at line 7 "
            f'(`os.environ["XLA_USE_BF16"] = "0"`) before anything used the device, so it {NEVER} '
            f"{ADD_BY_HAND} [fixed]",
            't.py:7:12: BFM002 XLA_USE_BF16="0" means bf16 was off: removed, nothing added [fixed]',
        ],
    ),
    # a private function nothing calls or names: its body never ran
    "never-called-private": (
        HEAD + '\n\ndef _enable_bf16():\n    os.environ["XLA_USE_BF16"] = "1"\n' + TRAIN(late="") + MAIN,
        HEAD + "\n\ndef _enable_bf16():\n    pass\n" + TRAIN(late="") + MAIN,
        [
            "t.py:9:16: BFM049 XLA_USE_BF16 removed: it is set in `_enable_bf16()` (line 8), a "
            "private function nothing in this file calls or names, so it "
            f"{NEVER} (add the mode's code by hand if bf16 is wanted, and run `bf16-migrate verify`) [fixed]",
        ],
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(DEAD))
def test_a_write_that_never_took_effect_goes_with_nothing_added(case, mode):
    source, expected, diagnostics = DEAD[case]
    assert migrate(source, mode) == (expected, diagnostics)


# -- cannot be told: the switch is kept and reported (the file is left as it is) ----------------------
KEPT = {
    # something between the write and its undo may have used the device
    "undo-after-unknown-call": (
        HEAD + 'os.environ["XLA_USE_BF16"] = "1"\nwarm_up()\ndel os.environ["XLA_USE_BF16"]\n' + TRAIN(late="") + MAIN,
        [
            't.py:6:12: BFM049 XLA_USE_BF16 is taken back at line 8 (`del os.environ["XLA_USE_BF16"]`), '
            "and whether the code in between used the device with it cannot be told: the switch is kept "
            "with its undo; delete both if the script trained in fp32, else replace it by hand with the "
            "explicit code for --mode {mode} where it was in force",
            "t.py:8:16: BFM049 XLA_USE_BF16: this takes back the write of line "
            "6, which is kept (see there): kept with it",
        ],
    ),
    "never-called": (
        HEAD + '\n\ndef enable_bf16():\n    os.environ["XLA_USE_BF16"] = "1"\n' + TRAIN(late="") + MAIN,
        [
            "t.py:9:16: BFM049 XLA_USE_BF16 is set in `enable_bf16()` (line 8), which nothing in "
            "this file calls: if nothing else does, it never took effect (the script trained in "
            "fp32): delete it; if another module calls it, the switch is kept: replace it by hand "
            "with the explicit code for --mode {mode} there",
        ],
    ),
    "lambda": (
        HEAD + '\nenable_bf16 = lambda: os.environ.update(XLA_USE_BF16="1")\n' + TRAIN(late="") + MAIN,
        [
            "t.py:7:41: BFM049 XLA_USE_BF16 is written inside a lambda (line 7): whether and when it runs "
            "cannot be told here, so the switch is kept; delete it if nothing calls the lambda before the "
            "device is used, else replace it by hand with the explicit code for --mode {mode}",
        ],
    ),
    "after-training": (
        HEAD + TRAIN(late="") + '\n\nif __name__ == "__main__":\n    train()\n    os.environ["XLA_USE_BF16"] = "1"\n',
        [
            "t.py:22:16: BFM049 XLA_USE_BF16 is set after `train()` (line 21), which had "
            f"already used the device: {PROBABLY} replace it by hand with the explicit code "
            f"for --mode {{mode}} before the device is used",
        ],
    ),
    "late-call": (
        HEAD
        + '\n\ndef configure():\n    os.environ["XLA_USE_BF16"] = "1"\n'
        + TRAIN(late="    configure()  # too late: the device is in use\n")
        + MAIN,
        [
            "t.py:9:16: BFM049 XLA_USE_BF16 is set in `configure()`, which is called (line 15) "
            f"only after the device was first used: {PROBABLY} replace it by hand with the "
            f"explicit code for --mode {{mode}} before the device is used",
        ],
    ),
    # in force only under the flag, which cannot be evaluated in train(), where the model is cast
    "called-if-flag": (
        HEAD
        + 'import sys\n\n\ndef setup():\n    os.environ["XLA_USE_BF16"] = "1"\n'
        + TRAIN(late="")
        + '\n\nif __name__ == "__main__":\n    if "--bf16" in sys.argv:\n        setup()\n    train()\n',
        [
            "t.py:10:16: BFM049 XLA_USE_BF16 is set in `setup()`, which is called (line 27) only "
            'under `"--bf16" in sys.argv`: the switch is kept; replace it by hand with the '
            "explicit code for --mode {mode} under the same condition",
        ],
    ),
    "early-branch": (
        HEAD
        + "import sys\n"
        + TRAIN(late="")
        + "\n\ndef main(bf16):\n    if not bf16:\n        train()\n        return\n"
        '    os.environ["XLA_USE_BF16"] = "1"\n    train()\n\n\nif __name__ == "__main__":\n'
        '    main("--bf16" in sys.argv)\n',
        [
            "t.py:25:16: BFM041 XLA_USE_BF16 is switched on under a condition (bf16) that cannot be "
            "re-evaluated where the model is cast (line 12): replace the write by hand with the "
            "explicit code for --mode {mode}, under the same condition",
        ],
    ),
    "and-expr": (
        HEAD
        + "import sys\n"
        + TRAIN(late="")
        + '\n\ndef main(bf16):\n    bf16 and os.environ.update(XLA_USE_BF16="1")\n    train()\n\n'
        '\nif __name__ == "__main__":\n    main("--bf16" in sys.argv)\n',
        [
            "t.py:22:32: BFM041 XLA_USE_BF16 is switched on under a condition (bf16) that cannot be "
            "re-evaluated where the model is cast (line 12): replace the write by hand with the "
            "explicit code for --mode {mode}, under the same condition",
        ],
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_write_that_may_not_have_taken_effect_is_kept_and_reported(case, mode):
    source, diagnostics = KEPT[case]
    assert migrate(source, mode) == (source, [d.format(mode=mode) for d in diagnostics])


# -- in force: migrated as before ------------------------------------------------------------------------
AMP_TRAIN = TRAIN(late="").replace(
    "        loss = model(x).sum()\n",
    '        with torch.autocast("xla", dtype=torch.bfloat16):\n            loss = model(x).sum()\n',
)
AMP = (
    "t.py:{line}:{col}: BFM001 XLA_USE_BF16 replaced: model kept in FP32, forward and "
    'loss under torch.autocast("xla", dtype=torch.bfloat16) [fixed]'
)
LIVE = {
    # the device was used between the write and the del: the del only cleans up
    "del-after-training": (
        HEAD + TRAIN(late="") + '\n\nif __name__ == "__main__":\n    os.environ["XLA_USE_BF16"] = "1"\n'
        '    train()\n    del os.environ["XLA_USE_BF16"]\n',
        HEAD + AMP_TRAIN + '\n\nif __name__ == "__main__":\n    train()\n',
        [
            AMP.format(line=21, col=16),
            "t.py:23:20: BFM044 XLA_USE_BF16 is taken out of the environment here; "
            "once no code sets it this is dead: removed [fixed]",
        ],
    ),
    # os.putenv does not update os.environ: the pop does not take it back
    "pop-after-putenv": (
        HEAD + 'os.putenv("XLA_USE_BF16", "1")\nos.environ.pop("XLA_USE_BF16", None)\n' + TRAIN(late="") + MAIN,
        HEAD + AMP_TRAIN + MAIN,
        [
            AMP.format(line=6, col=11),
            "t.py:7:16: BFM044 XLA_USE_BF16 is taken out of the environment here; "
            "once no code sets it this is dead: removed [fixed]",
        ],
    ),
    # an early exit that trains nothing (a usage error) conditions nothing
    "exit-on-usage-error": (
        HEAD + "import sys\n" + TRAIN(late="") + "\n\ndef main(argv):\n    if len(argv) > 2:\n"
        '        print("usage: train.py [--bf16]")\n        sys.exit(2)\n'
        '    os.environ["XLA_USE_BF16"] = "1"\n    train()\n\n\nif __name__ == "__main__":\n'
        "    main(sys.argv)\n",
        HEAD
        + "import sys\n"
        + AMP_TRAIN
        + '\n\ndef main(argv):\n    if len(argv) > 2:\n        print("usage: train.py [--bf16]")\n'
        '        sys.exit(2)\n    train()\n\n\nif __name__ == "__main__":\n    main(sys.argv)\n',
        [AMP.format(line=25, col=16)],
    ),
}


@pytest.mark.parametrize("case", sorted(LIVE))
def test_a_write_in_force_is_migrated(case):
    source, expected, diagnostics = LIVE[case]
    assert migrate(source, "amp") == (expected, diagnostics)


FLAG_AND_WRITE = """import os
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main(bf16):
    bf16 and os.environ.update(XLA_USE_BF16="1")
    device = xm.xla_device()
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4).to(device)
    loss = model(x).sum()
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    main("--bf16" in sys.argv)
"""


def test_a_write_behind_and_is_migrated_under_its_flag():
    """``flag and os.environ.update(...)`` runs the write only when the flag is true (Python's
    language reference, "Boolean operations"): the changes go under the flag, as for ``if flag:``."""
    code, diagnostics = migrate(FLAG_AND_WRITE, "stochastic")
    assert code == FLAG_AND_WRITE.replace('XLA_USE_BF16="1"', 'NEURON_RT_STOCHASTIC_ROUNDING_EN="1"').replace(
        "    optimizer = torch.optim", "    if bf16:\n        model.to(torch.bfloat16)\n    optimizer = torch.optim"
    ).replace("model(x).sum()", "model(x.to(torch.bfloat16) if bf16 else x).sum()")
    assert diagnostics == [
        "t.py:10:32: BFM001 XLA_USE_BF16 replaced: model cast to torch.bfloat16, floating inputs cast, "
        "NEURON_RT_STOCHASTIC_ROUNDING_EN=1, all under the script's condition `bf16` [fixed]"
    ]
    code, diagnostics = migrate(FLAG_AND_WRITE, "amp")
    assert code == FLAG_AND_WRITE.replace('    bf16 and os.environ.update(XLA_USE_BF16="1")\n', "").replace(
        "    loss = model(x).sum()\n",
        '    with torch.autocast("xla", dtype=torch.bfloat16, enabled=bool(bf16)):\n        loss = model(x).sum()\n',
    )
    assert diagnostics == [
        "t.py:10:32: BFM001 XLA_USE_BF16 replaced: model kept in FP32, forward and loss under "
        'torch.autocast("xla", dtype=torch.bfloat16), all under the script\'s condition `bf16` [fixed]'
    ]


EARLY_RETURN_AND_WRITE = """import os
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main(bf16):
    device = xm.xla_device()
    model = nn.Linear(4, 2)
    if not bf16:
        print(model.to(device)(torch.randn(8, 4).to(device)).sum())
        return
    os.environ["XLA_USE_BF16"] = "1"
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4).to(device)
    loss = model(x).sum()
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    main("--bf16" in sys.argv)
"""


def test_a_write_after_an_early_return_is_migrated_under_the_branch_condition():
    """The device use in ``if not bf16: ...; return`` is not on the path to the write (it was
    removed as a late write, BFM047, which left the --bf16 run in fp32): the write runs only when
    ``bf16`` holds, so the changes go under ``bf16``."""
    code, diagnostics = migrate(EARLY_RETURN_AND_WRITE, "amp")
    assert code == EARLY_RETURN_AND_WRITE.replace('    os.environ["XLA_USE_BF16"] = "1"\n', "").replace(
        "    loss = model(x).sum()\n",
        '    with torch.autocast("xla", dtype=torch.bfloat16, enabled=bool(bf16)):\n        loss = model(x).sum()\n',
    )
    assert diagnostics == [
        "t.py:15:16: BFM001 XLA_USE_BF16 replaced: model kept in FP32, forward and loss under "
        'torch.autocast("xla", dtype=torch.bfloat16), all under the script\'s condition `bf16` [fixed]'
    ]
    code, _ = migrate(EARLY_RETURN_AND_WRITE, "stochastic")
    assert (
        "    if bf16:\n        model.to(torch.bfloat16)\n" in code
        and "model(x.to(torch.bfloat16) if bf16 else x)" in code
    )


def test_an_undo_is_kept_where_the_write_it_undoes_stays():
    """A framework's plugin sets the switch while in use and takes it out in ``teardown()``, with no model of its
    own: the write is kept (BFM010), so the undo stays with it (BFM044 ``kept``); removed, the variable stayed set
    for every process started after (a hunt on real code, Lightning's XLA precision plugins). Where the write goes,
    the undo goes too."""
    plugin = (
        "import os\n\n\nclass Bf16Plugin:\n    def __init__(self):\n"
        '        os.environ["XLA_USE_BF16"] = "1"\n\n    def teardown(self):\n'
        '        os.environ.pop("XLA_USE_BF16", None)\n'
    )
    for mode in MODES:
        code, said = migrate(plugin, mode)
        assert code == plugin
        assert [s for s in said if "BFM044" in s] == [
            "t.py:9:24: BFM044 XLA_USE_BF16 is taken out of the environment here, and the file's write that sets it "
            "(line 6) stays: kept with it (removed, the variable would stay set for every process started after); "
            "remove both once the switch goes"
        ]
        assert any("BFM010" in s for s in said)
