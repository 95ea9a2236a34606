#!/bin/bash
# Device runs, batch 6: gpu-compatible on two cases (each waits on /tmp/bfm-xla.lock).
cd "$(dirname "$0")"
./vqueue.sh fourier_coords fourier_coords train_field.py gpu-compatible --legacy-env XLA_USE_BF16=1
./vqueue.sh fakequant_counts fakequant_counts train_qat.py gpu-compatible
