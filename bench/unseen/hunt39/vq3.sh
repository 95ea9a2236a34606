#!/bin/bash
# the hand-fixed texts against the legacy case (each under the lock inside against.sh)
cd "$(dirname "$0")"
./against.sh serve_handler.fixed stochastic serve_handler app.py serve_handler.fixed.stochastic.py --legacy-env XLA_USE_BF16=1
./against.sh embed_kmeans.fixed stochastic embed_kmeans embed_cluster.py embed_kmeans.fixed.stochastic.py
