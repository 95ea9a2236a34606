#!/bin/bash
cd "$(dirname "$0")"
while pgrep -f "vq3.sh" >/dev/null; do sleep 5; done
echo "## kv_generate bf16 scalars (hand)"; ./against.sh kv_generate.bf16scalars stochastic kv_generate generate.py kv_generate.bf16scalars.stochastic.py
