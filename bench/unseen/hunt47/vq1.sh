#!/bin/bash
# Device runs, batch 1: the codemod's own migrations (each waits on /tmp/bfm-xla.lock).
cd "$(dirname "$0")"
./vqueue.sh fourier_coords fourier_coords train_field.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh welford_norm welford_norm train_norm.py stochastic
./vqueue.sh fakequant_counts fakequant_counts train_qat.py stochastic
