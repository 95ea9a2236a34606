"""nox sessions for the LoRA fine-tuning experiment (run on a TPU VM: `nox -s tpu_finetune`)."""
import nox


@nox.session(python=False)
def tpu_finetune(session):
    session.run(
        "python", "finetune_lora.py", "--steps", "30", "--rank", "4",
        env={"PJRT_DEVICE": "TPU", "XLA_USE_BF16": "1"},
    )


@nox.session(python=False)
def lint(session):
    session.run("ruff", "check", ".")
