"""Launch lines read as bash would see them: expansions of the script's own variables, shell
functions that forward their arguments, the launchers and wrappers public projects use, and the
messages that lead to the real blocker."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from bf16_migrate.carriers import shell
from bf16_migrate.carriers.link import passes_flag
from bf16_migrate.carriers.model import Analysis
from bf16_migrate.command_lines import read_command
from bf16_migrate.project import migrate_paths

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch_xla

    def main():
        device = torch_xla.device()
        model = torch.nn.Linear(4, 2).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(8, 4).to(device)
        loss = model(x).sum()
        loss.backward()
        opt.step()

    main()
    """
)


def launches(script: str) -> list:
    text = textwrap.dedent(script)
    analysis = Analysis("shell", text)
    shell.ShellFragment(text, "run.sh", analysis)
    return [(launch.line, launch.target, launch.problem) for launch in analysis.launches]


@pytest.mark.parametrize(
    "words, target",
    [
        (
            ["neuron_parallel_compile", "--num_parallel", "4", "torchrun", "--nproc_per_node=2", "t.py"],
            ("script", "t.py"),
        ),
        (["python", "xla_spawn.py", "--num_cores", "8", "run_glue.py", "--bf16"], ("script", "run_glue.py")),
        (["accelerate", "launch", "--mixed_precision", "bf16", "--tpu", "t.py"], ("script", "t.py")),
        (["accelerate", "launch", "-m", "pkg.train"], ("module", "pkg.train")),
        (["coverage", "run", "--source=pkg", "-p", "t.py"], ("script", "t.py")),
        (["srun", "-N", "2", "--ntasks-per-node", "1", "python3", "-u", "t.py"], ("script", "t.py")),
        (
            [
                "python",
                "-m",
                "torch_xla.distributed.xla_dist",
                "--tpu=a",
                "--restart-tpuvm-pod-server",
                "--",
                "python3",
                "t.py",
            ],
            ("script", "t.py"),
        ),
    ],
)
def test_wrappers_and_launchers_are_looked_through(words, target):
    cmd = read_command(words)
    assert (cmd.target, cmd.problem) == (target, None)


def test_xla_dist_env_is_a_setting_of_the_command():
    cmd = read_command(
        ["python", "-m", "torch_xla.distributed.xla_dist", "--env", "XLA_USE_BF16=1", "--", "python", "t.py"]
    )
    assert [(e.name, e.value, e.words) for e in cmd.env] == [("XLA_USE_BF16", "1", [3, 4])]


def test_script_arguments_are_kept_for_framework_flags():
    cmd = read_command(["torchrun", "--nproc_per_node", "2", "ft.py", "--output_dir", "o", "--bf16"])
    assert cmd.args == ["--output_dir", "o", "--bf16"]


@pytest.mark.parametrize(
    "args, on",
    [
        (["--bf16"], True),
        (["--bf16", "--x"], True),
        (["--bf16", "false"], False),
        (["--bf16=True"], True),
        (["--bf16=0"], False),
        (["--fp16"], False),
        ([], False),
        (["--bf16", "--bf16", "no"], False),
    ],
)
def test_passes_flag(args, on):
    assert passes_flag(args, "--bf16") is on


def test_options_held_in_a_variable_are_expanded():
    got = launches(
        """\
        N=2
        if [ -n "$SLURM_NTASKS" ]; then
            ARGS="--nproc_per_node $N --nnodes $SLURM_NTASKS --master_addr $(hostname)"
        else
            ARGS="--nproc_per_node $N"
        fi
        torchrun $ARGS train.py --steps 10
        """
    )
    assert got == [(7, ("script", "train.py"), None)]


def test_command_word_in_a_variable_set_on_one_path():
    got = launches(
        """\
        if [ "$PRE" = 1 ]; then
            MAYBE="neuron_parallel_compile --num_parallel 4"
        fi
        $MAYBE torchrun --nproc_per_node 2 train.py
        RUN="torchrun --nproc_per_node 2 train.py"
        $RUN --steps 3
        """
    )
    assert got == [(4, ("script", "train.py"), None), (6, ("script", "train.py"), None)]


def test_quoted_expansion_is_one_word_and_empty_unquoted_is_none():
    got = launches(
        """\
        OPTS=""
        python3 $OPTS train.py
        SCRIPT="my train.py"
        python3 "$SCRIPT"
        """
    )
    assert got == [(2, ("script", "train.py"), None), (4, ("script", "my train.py"), None)]


def test_what_stays_computed_is_named_with_its_line():
    ((line, target, problem),) = launches(
        """\
        ARGS=$(cat launcher.args)
        torchrun $ARGS train.py
        """
    )
    assert target is None and "computed at run time" in problem and "line 1" in problem


def test_different_scripts_on_different_paths_are_reported():
    ((line, target, problem),) = launches(
        """\
        if [ "$1" = big ]; then S=big.py; else S=small.py; fi
        python3 $S
        """
    )
    assert target is None and "big.py" in problem and "small.py" in problem


def test_functions_forwarding_their_arguments_are_followed_to_each_call():
    got = launches(
        """\
        CDIR="$(cd "$(dirname "$0")" ; pwd -P)"
        function run_test {
          PJRT_DEVICE=CPU python3 "$@"
        }
        function run_bf16 {
          XLA_USE_BF16=1 run_test "$@"
        }
        run_test "$CDIR/a.py" --fast
        run_bf16 "$CDIR/b.py"
        """
    )
    assert got == [(8, ("script", "./a.py"), None), (9, ("script", "./b.py"), None)]


def test_a_call_prefix_reaches_the_launches_of_the_function():
    text = textwrap.dedent(
        """\
        train() {
          torchrun --nproc_per_node 2 train.py
        }
        XLA_USE_BF16=1 train
        """
    )
    analysis = Analysis("shell", text)
    shell.ShellFragment(text, "run.sh", analysis)
    (launch,) = analysis.launches
    assert launch.target == ("script", "train.py")
    assert [analysis.entries[e].variable for e in launch.reached_by] == ["XLA_USE_BF16"]


def test_trailing_continuation_at_end_of_file_parses(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython3 train.py \\\n")
    (tmp_path / "train.py").write_text(TRAIN)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    outcome = migrate_paths([tmp_path], "gpu-compatible", write=True)
    assert not outcome.errors
    assert "XLA_USE_BF16" not in script.read_text()
    assert script.read_text().endswith("python3 train.py \\\n")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def _codes(tmp_path: Path, script: str, mode: str = "stochastic"):
    (tmp_path / "run.sh").write_text(textwrap.dedent(script))
    (tmp_path / "train.py").write_text(TRAIN)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        outcome = migrate_paths([Path(".")], mode, write=False)
    finally:
        os.chdir(old)
    assert not outcome.errors
    return [(d.code, d.line, d.message) for d in outcome.diagnostics if d.path.endswith("run.sh")]


def test_comments_are_not_settings_and_messages_are_text(tmp_path):
    got = _codes(
        tmp_path,
        """\
        #!/bin/bash
        # XLA_USE_BF16 is deprecated: switched to model.to(torch.bfloat16)
        echo "Full bf16 (XLA_USE_BF16=1)"
        python3 train.py
        """,
    )
    assert [(c, line) for c, line, _ in got] == [("BFM091", 3)]


def test_a_helper_in_command_substitution_outside_the_tree_does_not_hold_the_switch(tmp_path):
    got = _codes(
        tmp_path,
        """\
        export XLA_DOWNCAST_BF16=1
        HOSTS=$(/opt/cluster/list_nodes.py)
        torchrun --nproc_per_node 2 train.py
        """,
    )
    assert [c for c, _, _ in got] == ["BFM001"]


def test_every_blocker_is_listed_deepest_first(tmp_path):
    (tmp_path / "eval.py").write_text('import torch\nprint(torch.ones(2, device="xla"))\n')
    got = _codes(
        tmp_path,
        """\
        export XLA_USE_BF16=1
        python3 eval.py
        python3 $SCRIPT
        """,
    )
    ((code, line, message),) = got
    assert code == "BFM112" and line == 1
    assert message.index("eval.py") < message.index("also:") < message.index("$SCRIPT")


def test_messages_name_no_absolute_temporary_path(tmp_path):
    (tmp_path / "eval.py").write_text("import torch\n")
    got = _codes(
        tmp_path,
        """\
        export XLA_USE_BF16=1
        python3 "$(pwd)/eval.py"
        python3 ./eval.py
        """,
    )
    assert got and all(str(tmp_path) not in message for _, _, message in got)
