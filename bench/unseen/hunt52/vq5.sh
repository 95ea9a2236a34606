#!/bin/bash
# accum_ckpt's device variant again, after replacing xm.xrt_world_size() (gone in torch-xla 2.9) by xr.world_size()
cd "$(dirname "$0")"
./vqueue.sh probe.accum_ckpt_xla probes/accum_ckpt_xla train_accum.py stochastic
