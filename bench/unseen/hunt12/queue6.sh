#!/bin/bash
# repros for lbfgs_skypilot (each under the XLA lock by run_repro.sh)
cd /work/wt/hunt12/bench/unseen/hunt12
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_closure_in_helper stochastic
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_closure_in_helper amp
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_resume_fresh_model stochastic
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_orthogonal_bf16_nan stochastic
