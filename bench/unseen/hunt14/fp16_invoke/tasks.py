"""invoke tasks: `inv train` on the TPU VM, `inv smoke` for a quick check."""
from invoke import task

XLA_ENV = {"PJRT_DEVICE": "TPU", "XLA_DOWNCAST_FP16": "1"}


@task
def train(c, steps=40):
    c.run(f"python train_sae.py --steps {steps} --out codes.npy", env=XLA_ENV)


@task
def smoke(c):
    c.run("python train_sae.py --steps 5 --out /tmp/codes.npy", env=XLA_ENV)
