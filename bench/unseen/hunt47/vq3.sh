#!/bin/bash
# Device runs, batch 3: the repros, and spectral_mixer migrated by hand in amp (each waits on /tmp/bfm-xla.lock).
cd "$(dirname "$0")"
./vrepro.sh complex_param_cast stochastic
./vrepro.sh amp_metric_matmul amp
./against.sh spectral.amp_plain amp spectral_mixer train_mixer.py spectral.amp_plain.amp.py
./repros/python_count_recompiles/run.sh
# is welford_norm's graph FAIL repeatable? (the hand text welford.cumsum_f32, the same Welford loop, had 3 compilations)
./vqueue.sh welford_norm_again welford_norm train_norm.py stochastic
PSTEPS=7 ./probes/compiles.sh welford_cumsum_f32 /tmp/hunt47s/welford.cumsum_f32.stochastic train_norm.py
./vq4.sh
