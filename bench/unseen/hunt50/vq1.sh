#!/bin/bash
# The device runs of the codemod's own migrations, one after another (each under the lock, --steps 6).
cd "$(dirname "$0")"
./vqueue.sh step_factory step_factory train.py stochastic
./vqueue.sh pytree_dicts pytree_dicts train_multi.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
./vqueue.sh ctx_wrapper ctx_wrapper train_cls.py amp
./vqueue.sh semisup_zip semisup_zip train_ssl.py gpu-compatible --legacy-env XLA_USE_BF16=1
