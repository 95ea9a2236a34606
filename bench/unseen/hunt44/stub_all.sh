#!/bin/bash
# every case (and the probes) unmigrated + migrated in the 3 modes under the stub -> verify_logs/LABEL.MODE.stub.txt
cd "$(dirname "$0")"
mkdir -p /tmp/hunt44work
export WORK_DIR=/tmp/hunt44work
./stubrun.sh devctx_mlp cases/devctx_mlp 'STEPS=4 python train.py'
./stubrun.sh default_device cases/default_device 'STEPS=4 bash run.sh'
./stubrun.sh meta_assign cases/meta_assign 'STEPS=4 python finetune.py'
./stubrun.sh pinn_downcast cases/pinn_downcast 'STEPS=4 python pinn.py'
./stubrun.sh ode_double cases/ode_double 'STEPS=3 bash launch.sh'
./stubrun.sh dtype_config cases/dtype_config 'STEPS=4 python train_seq.py'
./stubrun.sh host_made_state cases/host_made_state 'STEPS=4 python train_dqn.py'
./stubrun.sh param_cl cases/param_cl 'make train STEPS=4'
./stubrun.sh param_cl_script cases/param_cl 'python train_cnn.py --steps 4' --legacy-env XLA_USE_BF16=1
./stubrun.sh host_state_noload probes/host_state_noload 'STEPS=4 python train_dqn.py'
./stubrun.sh param_noorth probes/param_noorth 'python train_cnn.py --steps 4'
