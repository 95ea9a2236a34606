#!/bin/bash
# the device runs, in the order they ran (each waits on /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
./vqueue.sh pointcloud_ae pointcloud_ae train_pc.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh flow_realnvp flow_realnvp train_flow.py amp --legacy-env XLA_USE_BF16=1
./vqueue.sh kws_logmel kws_logmel train_kws.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
./vqueue.sh seg_unet seg_unet train_unet.py stochastic --legacy-env XLA_USE_BF16=1
