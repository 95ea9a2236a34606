#!/bin/bash
# the stub runs of the 8 cases (unmigrated + 3 migrated copies each) -> verify_logs/CASE.MODE.stub.txt
cd "$(dirname "$0")"
NB=$PWD/repros/nb2py.py
./stubrun.sh dqn_soft cases/dqn_soft 'STEPS=6 OUT_DIR=. python dqn.py'
./stubrun.sh ddpm_cfg cases/ddpm_cfg 'STEPS=4 OUT_DIR=. python train_ddpm.py'
./stubrun.sh wgan_gp cases/wgan_gp 'STEPS=3 bash run_gan.sh'
./stubrun.sh twotower_logq cases/twotower_logq 'STEPS=4 python train_retrieval.py'
./stubrun.sh ts_forecast cases/ts_forecast 'STEPS=4 bash run.sh'
./stubrun.sh s2s_notebook cases/s2s_notebook "python $NB seq2seq_reverse.ipynb > nb_flat.py && STEPS=4 python nb_flat.py"
./stubrun.sh anchor_det cases/anchor_det 'STEPS=4 python train_det.py'
./stubrun.sh mixup_ls cases/mixup_ls 'STEPS=4 python train_mix.py'
