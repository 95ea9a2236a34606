#!/bin/bash
# runs every case unmigrated and in the three modes under the stub -> verify_logs/CASE.MODE.stub.txt
cd "$(dirname "$0")"
export TAILN=8
STEPS=4 ./stubrun.sh lora_merge cases/lora_merge 'python finetune_lora.py --out /tmp/hunt52_lora'
STEPS=4 ./stubrun.sh prompt_tune cases/prompt_tune 'bash run.sh'
STEPS=6 UNFREEZE_AT=3 ./stubrun.sh probe_unfreeze cases/probe_unfreeze 'python linear_probe.py'
STEPS=3 ./stubrun.sh accum_ckpt cases/accum_ckpt 'python train_accum.py'
./stubrun.sh lowrank_param cases/lowrank_param 'python finetune_sn.py --bf16 --steps 4'
./stubrun.sh prefix_kv cases/prefix_kv 'python train_prefix.py 4'
