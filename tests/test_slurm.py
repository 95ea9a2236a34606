"""Slurm batch scripts and command lines are launchers (carriers/shell/slurm.py): the ``--export``
lists of ``#SBATCH`` directives and of ``sbatch``/``srun`` command lines are edited item by item
(ALL/NONE/NIL and the other variables kept), and the script a batch job ``srun``s is migrated with
it. The golden case is fixtures/carriers/slurm/ (tests/test_carriers.py); these are the rules.
Before, all of it was silent: exit 0, "0 left to do", the variable left in force."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf16_migrate.carriers.shell.expand import COMPUTED as EXPAND_COMPUTED
from bf16_migrate.carriers.shell.slurm import COMPUTED, directive_block_end
from bf16_migrate.command_lines import export_list, read_command
from bf16_migrate.project import migrate_paths

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()
CAST = "model.to(torch.bfloat16)"
SR = "NEURON_RT_STOCHASTIC_ROUNDING_EN"


def run(tmp_path: Path, files: dict[str, str], mode: str = "amp"):
    (tmp_path / "train.py").write_text(TRAIN)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    outcome = migrate_paths([tmp_path], mode, write=True)
    assert outcome.errors == []
    found = [(Path(d.path).name, d.code) for d in outcome.diagnostics]
    script = (tmp_path / "train.py").read_text()
    migrated = CAST in script or 'torch.autocast("xla"' in script
    return {name: (tmp_path / name).read_text() for name in files}, found, migrated


# -- the grammar -------------------------------------------------------------------------------------------------------
def test_an_export_list_is_split_as_slurm_splits_it():
    """At commas outside quotes; a whole item in quotes loses them (find_quote_token, src/common/env.c)."""
    listed = export_list("ALL,\"A=1,2\",B='x,y',nil,C")
    assert [(i.keyword, i.name, i.value) for i in listed.items] == [
        ("ALL", None, None),
        (None, "A", "1,2"),
        (None, "B", "'x,y'"),
        ("NIL", None, None),
        (None, "C", None),
    ]
    assert not listed.isolates
    assert export_list("NONE").isolates and export_list("XLA_USE_BF16=1").isolates and export_list("NIL,A").isolates


@pytest.mark.parametrize(
    "words, target, isolated, settings",
    [
        (["sbatch", "--export=ALL,XLA_USE_BF16=1", "-N", "2", "job.sh", "x"], "job.sh", False, [("XLA_USE_BF16", "1")]),
        (["sbatch", "-N2", "--export", "NONE,XLA_USE_BF16=1,PATH", "job.sbatch"], "job.sbatch", True, None),
        (["sbatch", "--parsable", "--export=NIL", "-J", "x", "job"], "job", True, []),
        (["srun", "--export=ALL,XLA_DOWNCAST_BF16=1", "python", "t.py"], "t.py", False, [("XLA_DOWNCAST_BF16", "1")]),
        (["srun", "-N", "2", "--export", "NONE", "python3", "t.py"], "t.py", True, []),
    ],
)
def test_sbatch_and_srun_command_lines(words, target, isolated, settings):
    cmd = read_command(words)
    assert cmd.target is not None and cmd.target[1] == target
    assert cmd.isolated == isolated
    if settings is not None:
        assert [(e.name, e.value) for e in cmd.env] == settings


def test_sbatch_wrap_and_unknown_options_are_unresolved_python_launches():
    assert read_command(["sbatch", "--wrap", "python t.py"]).problem == "sbatch --wrap runs its command through `sh -c`"
    assert read_command(["sbatch", "-Z", "job.sh"]).problem == "unknown sbatch option -Z"
    assert read_command(["sbatch"]).problem == "sbatch reads the batch script from standard input"


def test_the_directive_block_ends_at_the_first_command():
    data = b"#!/bin/bash\n#SBATCH -N 1\n\n  # note\n#SBATCH --export=ALL\nmodule load x\n#SBATCH -t 5\n"
    assert data[directive_block_end(data) :].startswith(b"module load x")


def test_the_computed_placeholder_is_the_expanders():
    assert COMPUTED == EXPAND_COMPUTED


# -- batch scripts -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "directive, mode, after",
    [
        ("#SBATCH --export=ALL,XLA_USE_BF16=1", "amp", "#SBATCH --export=ALL"),
        (
            "#SBATCH --export=ALL,XLA_USE_BF16=1",
            "stochastic",
            "#SBATCH --export=ALL,NEURON_RT_STOCHASTIC_ROUNDING_EN=1",
        ),
        ("#SBATCH --export=XLA_USE_BF16=1", "amp", "#SBATCH --export=NONE"),  # nothing left: what an empty list is
        ("#SBATCH --export=NONE,XLA_USE_BF16=1,HOME", "gpu-compatible", "#SBATCH --export=NONE,HOME"),
        ("#SBATCH --export ALL,XLA_DOWNCAST_BF16=1  # bf16", "amp", "#SBATCH --export ALL  # bf16"),
        ('#SBATCH --export="ALL,XLA_USE_BF16=1" -N 1', "amp", '#SBATCH --export="ALL" -N 1'),
        ("#SLURM --export=ALL,XLA_USE_BF16=1", "amp", "#SLURM --export=ALL"),  # the old spelling, still read
    ],
)
def test_a_directive_export_is_migrated_with_the_script_the_job_runs(tmp_path, directive, mode, after):
    job = f"#!/bin/bash\n#SBATCH -N 1\n{directive}\nsrun python train.py\n"
    texts, found, migrated = run(tmp_path, {"job.sh": job}, mode)
    assert texts["job.sh"] == job.replace(directive, after)
    assert migrated
    assert ("job.sh", "BFM001") in found or ("job.sh", "BFM070") in found


def test_the_batch_script_may_be_named_sbatch_or_slurm(tmp_path):
    job = "#!/bin/bash\n#SBATCH --export=ALL,XLA_USE_BF16=1\nsrun python train.py\n"
    texts, _, migrated = run(tmp_path, {"job.sbatch": job, "other.slurm": job.replace("ALL,", "ALL,A=1,")})
    assert texts == {
        "job.sbatch": job.replace(",XLA_USE_BF16=1", ""),
        "other.slurm": job.replace(",XLA_USE_BF16=1", ",A=1"),
    }
    assert migrated


@pytest.mark.parametrize(
    "job, code",
    [
        # after the first command, or not at the first column: sbatch reads none of it
        ("#!/bin/bash\nmodule load neuron\n#SBATCH --export=ALL,XLA_USE_BF16=1\nsrun python train.py\n", "BFM114"),
        ("#!/bin/bash\n  #SBATCH --export=ALL,XLA_USE_BF16=1\nsrun python train.py\n", "BFM114"),
        # read, not rewritable in place
        ('#!/bin/bash\n#SBATCH --export=ALL,"XLA_USE_BF16=1"\nsrun python train.py\n', "BFM131"),
        ("#!/bin/bash\n#SBATCH --export=ALL,XLA_USE_BF16\nsrun python train.py\n", "BFM131"),  # the submitter's value
        ("#!/bin/bash\n#SBATCH --export=ALL,XLA_USE_BF16=$BF16\nsrun python train.py\n", "BFM130"),  # literal to Slurm
        # the directive's setting never reaches Python
        ("#!/bin/bash\n#SBATCH --export=ALL,XLA_USE_BF16=1\nsrun --export=NONE python train.py\n", "BFM110"),
    ],
)
def test_a_directive_that_cannot_be_migrated_is_kept_and_reported(tmp_path, job, code):
    texts, found, migrated = run(tmp_path, {"job.sh": job})
    assert texts["job.sh"] == job and not migrated
    codes = [c for name, c in found if name == "job.sh"]
    assert codes and all(c != "BFM001" for c in codes)
    if code is not None:
        assert code in codes


def test_a_directive_sbatch_cannot_read_is_the_files_error(tmp_path):
    """sbatch stops at an unmatched quote (fatal): the script cannot be submitted as it is."""
    job = '#!/bin/bash\n#SBATCH --job-name="a\n#SBATCH --export=ALL,XLA_USE_BF16=1\nsrun python train.py\n'
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "job.sh").write_text(job)
    outcome = migrate_paths([tmp_path], "amp", write=True)
    assert outcome.errors == [f"{tmp_path / 'job.sh'}:2:1: sbatch cannot read this directive (No closing quotation)"]
    assert (tmp_path / "job.sh").read_text() == job and CAST not in (tmp_path / "train.py").read_text()


def test_a_comment_naming_the_variable_in_another_directive_is_reported(tmp_path):
    job = '#!/bin/bash\n#SBATCH --comment="XLA_USE_BF16 run"\nexport XLA_USE_BF16=1\nsrun python train.py\n'
    texts, found, migrated = run(tmp_path, {"job.sh": job})
    assert texts["job.sh"] == job.replace("export XLA_USE_BF16=1\n", "") and migrated
    assert ("job.sh", "BFM131") in found


# -- command lines -----------------------------------------------------------------------------------------------------
JOB = "#!/bin/bash\n#SBATCH -N 1\nsrun python train.py --lr $LR\n"


@pytest.mark.parametrize(
    "line, after",
    [
        ("sbatch --export=ALL,XLA_USE_BF16=1 -N 2 job.sh", "sbatch --export=ALL -N 2 job.sh"),
        ("sbatch --export=ALL,LR=$lr,XLA_USE_BF16=1 job.sh", "sbatch --export=ALL,LR=$lr job.sh"),
        ('sbatch --export=ALL,LR="$lr",XLA_USE_BF16=1 job.sh', 'sbatch --export=ALL,LR="$lr" job.sh'),
        ('sbatch "--export=XLA_USE_BF16=1,LR=$lr" job.sh', 'sbatch "--export=LR=$lr" job.sh'),
        ("sbatch --export XLA_USE_BF16=1 job.sh", "sbatch --export NONE job.sh"),
    ],
)
def test_an_sbatch_export_list_is_edited_and_the_job_migrated(tmp_path, line, after):
    submit = f"#!/bin/bash\nfor lr in 0.1 0.01; do\n  {line}\ndone\n"
    texts, found, migrated = run(tmp_path, {"submit.sh": submit, "job.sh": JOB})
    assert texts["submit.sh"] == submit.replace(line, after)
    assert texts["job.sh"] == JOB and migrated


def test_srun_export_list_is_edited(tmp_path):
    job = "#!/bin/bash\nsrun --export=ALL,XLA_USE_BF16=1 python train.py\n"
    texts, _, migrated = run(tmp_path, {"job.sh": job}, "stochastic")
    assert texts["job.sh"] == job.replace("XLA_USE_BF16", "NEURON_RT_STOCHASTIC_ROUNDING_EN") and migrated


def test_sbatch_wrap_keeps_its_setting(tmp_path):
    submit = "#!/bin/bash\nsbatch --export=ALL,XLA_USE_BF16=1 --wrap 'python train.py'\n"
    texts, found, migrated = run(tmp_path, {"submit.sh": submit})
    assert texts["submit.sh"] == submit and not migrated and ("submit.sh", "BFM111") in found


@pytest.mark.parametrize(
    "submit, job",
    [
        # the job gets none of the submitter's environment
        ("#!/bin/bash\nexport XLA_USE_BF16=1\nsbatch --export=NONE job.sh\n", JOB),
        ("#!/bin/bash\nexport XLA_USE_BF16=1\nsbatch job.sh\n", JOB.replace("#SBATCH -N 1", "#SBATCH --export=NONE")),
        ("#!/bin/bash\nexport XLA_USE_BF16=1\nsbatch job.sh\n", JOB.replace("#SBATCH -N 1", "#SBATCH --export=LR")),
    ],
)
def test_a_setting_the_job_never_gets_is_not_migrated_into_its_script(tmp_path, submit, job):
    """The legacy job trained in f32: its script must not be cast to bf16 for a setting it never had."""
    texts, found, migrated = run(tmp_path, {"submit.sh": submit, "job.sh": job})
    assert not migrated and texts["submit.sh"] == submit
    assert [c for name, c in found if name == "submit.sh"] in (["BFM092"], ["BFM110"])


def test_a_job_that_takes_the_submitters_environment_gets_its_setting(tmp_path):
    submit = "#!/bin/bash\nexport XLA_USE_BF16=1\nsbatch job.sh\n"
    job = JOB.replace("#SBATCH -N 1", "#SBATCH --export=ALL,LR=0.1")
    texts, found, migrated = run(tmp_path, {"submit.sh": submit, "job.sh": job})
    assert migrated and texts["submit.sh"] == "#!/bin/bash\nsbatch job.sh\n"
