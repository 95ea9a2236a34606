#!/usr/bin/env bash
# Train the forecaster in the team image (the TPU runtime is in it); the code is mounted at /work.
set -e
IMAGE=${IMAGE:-us-docker.pkg.dev/acme-ml/images/torch-xla:2.9}
docker run --rm --privileged --net host \
  -e PJRT_DEVICE=TPU -e XLA_USE_BF16=1 \
  -v "$PWD":/work -w /work \
  "$IMAGE" python3 forecast.py --steps 200 "$@"
