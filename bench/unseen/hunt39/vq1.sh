#!/bin/bash
# the device runs of this hunt, one after another (each under the lock inside vqueue.sh)
cd "$(dirname "$0")"
./vqueue.sh serve_handler serve_handler app.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh embed_kmeans embed_kmeans embed_cluster.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh ckpt_export ckpt_export export.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh distill_kl distill_kl distill.py stochastic
