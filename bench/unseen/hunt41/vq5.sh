#!/bin/bash
# device queue 5: mp_resume after its xm.xrt_world_size() -> xr.world_size() fix (torch-xla 2.9 has no xrt_world_size)
cd "$(dirname "$0")"
./vqueue.sh mp_resume mp_resume train_mp.py stochastic --legacy-env XLA_USE_BF16=1 -- --init init.pt --out final.pt --steps 8
