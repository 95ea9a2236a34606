#!/usr/bin/env bash
# Train the denoiser on a Cloud TPU VM: copy the code over, then run it there.
set -euo pipefail
TPU_NAME=${TPU_NAME:-denoise-v4}
ZONE=${ZONE:-us-central2-b}

gcloud compute tpus tpu-vm scp --zone "$ZONE" denoise.py "$TPU_NAME":~/denoise.py
gcloud compute tpus tpu-vm ssh "$TPU_NAME" --zone "$ZONE" --worker=all \
  --command="PJRT_DEVICE=TPU XLA_DOWNCAST_BF16=1 python3 ~/denoise.py --steps 200 --batch 32"
