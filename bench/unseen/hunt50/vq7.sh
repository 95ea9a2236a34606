#!/bin/bash
# Hand-made RIGHT texts for gaps 2 and 3 (pytree_dicts): does verify pass them?
cd "$(dirname "$0")"
VOPTS="--legacy-env XLA_DOWNCAST_BF16=1" ./against_env.sh pd_fixed stochastic pytree_dicts train_multi.py pytree_dicts.fixed.stochastic.py
VOPTS="--legacy-env XLA_DOWNCAST_BF16=1" ./against_env.sh pd_fixed amp pytree_dicts train_multi.py pytree_dicts.fixed.amp.py
