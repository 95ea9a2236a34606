#!/bin/bash
# fifth batch: pointcloud_ae stochastic with the batch cast by hand (gap 1 fixed alone), then also the sibling's cdists
# given compute_mode (gap 2 fixed too)
cd "$(dirname "$0")"
VOPTS="--legacy-env XLA_USE_BF16=1" ./against.sh pc_rawcast stochastic pointcloud_ae train_pc.py pointcloud_ae.raw_cast.stochastic.py
VOPTS="--legacy-env XLA_USE_BF16=1" TEXT2=pc_ops.mm.stochastic.py PATH2=pc_ops.py ./against2.sh pc_rawcast_mm stochastic pointcloud_ae train_pc.py pointcloud_ae.raw_cast.stochastic.py
