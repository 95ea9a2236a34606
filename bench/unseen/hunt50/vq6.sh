#!/bin/bash
# A hand-made wrong stochastic text of semisup_zip: the augmentations computed in f32 (data.py left as the codemod left
# it) and cast to bf16 explicitly at their end, so no f32 ever meets a bf16 tensor.
cd "$(dirname "$0")"
VOPTS="--legacy-env XLA_USE_BF16=1" ./against_env.sh ss_augf32cast stochastic semisup_zip train_ssl.py semisup_zip.augf32cast.stochastic.py
