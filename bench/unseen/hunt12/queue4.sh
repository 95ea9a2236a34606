#!/bin/bash
# the repros (each run under the XLA lock by run_repro.sh)
cd /work/wt/hunt12/bench/unseen/hunt12
./repros/run_repro.sh r_argv_flag_removed stochastic --bf16
./repros/run_repro.sh r_argv_flag_removed amp --bf16
./repros/run_repro.sh r_amp_jvp_functional_call amp
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_factory_model_infer stochastic
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_factory_model_infer amp
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_rank_float_helper stochastic
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_gpu_hand_update_no_backward gpu-compatible
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_noise_to_param_device stochastic
