#!/bin/bash
# Runs every case unmigrated and migrated in the three modes under the stub torch_xla (stubrun.sh).
cd "$(dirname "$0")"
./stubrun.sh step_factory cases/step_factory 'STEPS=4 python train.py'
./stubrun.sh engine_split cases/engine_split 'STEPS=3 python main.py --epochs 2'
./stubrun.sh pytree_dicts cases/pytree_dicts 'STEPS=4 python train_multi.py'
./stubrun.sh ctx_wrapper cases/ctx_wrapper 'STEPS=4 python train_cls.py'
./stubrun.sh semisup_zip cases/semisup_zip 'STEPS=4 python train_ssl.py --threshold 0.6'
./stubrun.sh namedtuple_closures cases/namedtuple_closures 'STEPS=4 bash run.sh'
