#!/bin/bash
cd "$(dirname "$0")"
while [ "$(wc -l < verify_logs/queue3.out)" -lt 8 ]; do sleep 5; done
./vrun.sh moe_zeros_like amp bench/unseen/hunt17/moe_topk/variant_zeros_like/moe_topk.py
