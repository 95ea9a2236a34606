#!/bin/bash
# the third device queue: amp runs (gat.py's index_add_ of an f32 source into a bf16 destination; meta_sgd's functional_call)
cd "$(dirname "$0")"
./vqueue.sh gnn_scatter gnn_scatter gat.py amp --legacy-env XLA_USE_BF16=1 -- --steps 8
./vqueue.sh meta_sgd meta_sgd meta_sgd.py amp
