#!/bin/bash
# the fourth device queue: vq2's and vq3's runs that the full disk stopped (no record written), run again
cd "$(dirname "$0")"
./against_dir.sh rope_tied.hand stochastic rope_tied train_lm.py rope_tied.stochastic
./vqueue.sh gnn_scatter gnn_scatter gat.py amp --legacy-env XLA_USE_BF16=1 -- --steps 8
./vqueue.sh meta_sgd meta_sgd meta_sgd.py amp
