"""A launcher that loads its settings and starts its script through its own directory
(``HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"``, ``source "$HERE/env.sh"``,
``python3 "$HERE/../train.py"``): the directory idioms are read statically (tree-sitter-bash,
:mod:`bf16_migrate.carriers.shell.expand`), so the sourced file's setting reaches the script and
is migrated with it; a path that stays computed keeps the setting (BFM110)."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from test_trees import migrate_tree

SCRIPT = FIXTURES / "trees" / "sourced_env" / "train.py"


def _tree(where, launcher: str):
    tree = where / "proj"
    (tree / "launch").mkdir(parents=True)
    shutil.copyfile(SCRIPT, tree / "train.py")
    (tree / "launch" / "env.sh").write_text("export XLA_USE_BF16=1\nexport XLA_IR_DEBUG=0\n")
    (tree / "launch" / "run.sh").write_text("#!/usr/bin/env bash\nset -e\n" + launcher)
    return tree


@pytest.mark.parametrize(
    "here",
    [
        '"$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        '"$(cd "$(dirname "$0")"; pwd)"',
        '"$(dirname "$0")"',
        '"$(dirname "$(readlink -f "$0")")"',
        '"$(dirname "$(realpath "${BASH_SOURCE[0]}")")"',
        '"${BASH_SOURCE%/*}"',
        '"${0%/*}"',
    ],
)
def test_the_launchers_own_directory_leads_to_the_sourced_file_and_the_script(tmp_path, here):
    _tree(tmp_path, f'HERE={here}\nsource "$HERE/env.sh"\npython3 "$HERE/../train.py" --steps 3 "$@"\n')
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert changed["launch/env.sh"] == "export NEURON_RT_STOCHASTIC_ROUNDING_EN=1\nexport XLA_IR_DEBUG=0\n"
    assert "    model.to(torch.bfloat16)\n" in changed["train.py"]
    assert not [d for d in outcome.diagnostics if not d.fixed], diagnostics


@pytest.mark.parametrize(
    "launcher,cause",
    [
        # a directory the environment gives
        (
            'source "$CONF_DIR/env.sh"\npython3 "$(dirname "$0")/../train.py"\n',
            '("$CONF_DIR/env.sh": $CONF_DIR (from the environment))',
        ),
        # two directories, by branch
        (
            'if [ -n "$CI" ]; then\n    HERE=/opt/job\nelse\n    HERE="$(dirname "$0")"\nfi\n'
            'source "$HERE/env.sh"\npython3 "$(dirname "$0")/../train.py"\n',
            "one of ./env.sh, /opt/job/env.sh, by the branch taken",
        ),
        # `readlink` without -f prints a link's target, not the script's path
        (
            'HERE="$(dirname "$(readlink "$0")")"\nsource "$HERE/env.sh"\npython3 "$(dirname "$0")/../train.py"\n',
            '$(dirname "$(readlink "$0")") (line 3)',
        ),
        # another pattern than the last path component
        (
            'source "${BASH_SOURCE%.sh}/env.sh"\npython3 "$(dirname "$0")/../train.py"\n',
            "(from the environment)",
        ),
    ],
)
def test_a_sourced_path_that_stays_computed_keeps_the_setting_and_says_why(tmp_path, launcher, cause):
    _tree(tmp_path, launcher)
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert changed == {}, diagnostics
    kept = [d for d in outcome.diagnostics if not d.fixed]
    assert [d.code for d in kept] == ["BFM110"], diagnostics
    assert kept[0].path.endswith("env.sh")
    assert "launch/run.sh loads this file" in kept[0].message and cause in kept[0].message, kept[0].message


@pytest.mark.parametrize(
    "launch",
    [
        'CMD=(python3 "$HERE/../train.py" --steps 3)\nenv XLA_USE_BF16=1 "${CMD[@]}"\n',
        "CMD=(python3 ../train.py --steps 3)\nXLA_USE_BF16=1 ${CMD[@]}\n",
        "PY=(python3 -u)\nXLA_USE_BF16=1 $PY ../train.py\n",
    ],
)
def test_a_launch_held_in_a_bash_array_is_read_through_it(tmp_path, launch):
    """``CMD=(torchrun ... train.py ...)`` then ``env XLA_USE_BF16=1 "${CMD[@]}"``: the array's elements are
    the command's words (``man bash`` "Arrays"), so the script is found and migrated with the setting
    (bench/unseen/hunt22 launch_cmd_array was BFM110); ``$PY`` of an array is its first element."""
    tree = _tree(tmp_path, 'HERE="$(dirname "$0")"\ncd "$HERE"\n' + launch)
    (tree / "launch" / "env.sh").unlink()
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert (
        "XLA_USE_BF16" not in changed["launch/run.sh"]
        and "NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in changed["launch/run.sh"]
    )
    assert "    model.to(torch.bfloat16)\n" in changed["train.py"]
    assert not [d for d in outcome.diagnostics if not d.fixed], diagnostics


def test_an_array_appended_to_stays_computed(tmp_path):
    """``CMD+=(...)`` changes what the array holds in ways the reader does not follow: computed, kept."""
    _tree(tmp_path, 'CMD=(python3 "$(dirname "$0")/../train.py")\nCMD+=(--steps 3)\nenv XLA_USE_BF16=1 "${CMD[@]}"\n')
    (tmp_path / "proj" / "launch" / "env.sh").unlink()
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert changed == {} and [d.code for d in outcome.diagnostics if not d.fixed] == ["BFM110"], diagnostics
