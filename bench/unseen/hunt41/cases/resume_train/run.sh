#!/bin/bash
# Two-phase job on the cluster: phase 1 trains and checkpoints, phase 2 resumes from the checkpoint.
set -euo pipefail
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_USE_BF16=1
python train_resume.py --ckpt "${CKPT:-/tmp/resume_ckpt.pt}"
