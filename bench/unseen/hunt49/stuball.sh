#!/bin/bash
# runs every case unmigrated and in the three modes under the stub -> verify_logs/CASE.MODE.stub.txt
cd "$(dirname "$0")"
export TAILN=8
./stubrun.sh seg_unet cases/seg_unet 'make train STEPS=4 PYTHON=python'
STEPS=4 ./stubrun.sh vae_beta cases/vae_beta 'python vae.py --out /tmp/hunt49_vae'
STEPS=4 ./stubrun.sh flow_realnvp cases/flow_realnvp 'python train_flow.py --samples /tmp/hunt49_flow/s.npy'
STEPS=3 ./stubrun.sh pointcloud_ae cases/pointcloud_ae 'bash run.sh'
STEPS=4 ./stubrun.sh kws_logmel cases/kws_logmel 'python train_kws.py'
STEPS=4 ./stubrun.sh metric_triplet cases/metric_triplet 'python train_metric.py'
