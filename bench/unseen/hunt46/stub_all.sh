#!/bin/bash
# Runs every case unmigrated and migrated in the three modes under the stub torch_xla (stubrun.sh).
cd "$(dirname "$0")"
NB=$(cd ../hunt_tools && pwd)/nb2py.py
./stubrun.sh base_trainer cases/base_trainer 'STEPS=4 bash run.sh'
./stubrun.sh func_losses cases/func_losses 'STEPS=5 python train_func.py --loss huber'
./stubrun.sh registry_jit cases/registry_jit 'STEPS=4 python train.py'
./stubrun.sh prefetch_gen cases/prefetch_gen 'STEPS=4 bash launch.sh'
./stubrun.sh callbacks_closure cases/callbacks_closure "python $NB train_callbacks.ipynb > nb.py && STEPS=4 python nb.py"
./stubrun.sh tied_outputs cases/tied_outputs 'STEPS=4 python train_lm.py'
./stubrun.sh grad_reversal cases/grad_reversal 'STEPS=4 make train'
