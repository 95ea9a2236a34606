#!/bin/bash
# vq6.sh was stopped before score.catalogue_bf16 ran: the codemod's own downcast_milestone text first (does the
# trace excuse the `.double()` -> `.float()` it wrote? see V5), then the catalogue text.
cd "$(dirname "$0")"
D=/tmp/hunt45data
./vqueue.sh downcast_milestone downcast_milestone train_seq.py stochastic --legacy-env XLA_DOWNCAST_BF16=1 -- --data-dir $D/seq_c
./against.sh score.catalogue_bf16 stochastic score_topk rank.py score.catalogue_bf16.stochastic.py -- --work-dir $D/rank_b
