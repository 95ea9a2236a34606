#!/bin/bash
# Run after vq4.sh: the codemod's score_topk (inference, first-use checkpoint in a shared --work-dir), moved up front;
# then the rare path truly beyond the trace (warm-up of 20000 steps, 5 s of trace).
cd "$(dirname "$0")"
./vqueue.sh score_topk_first score_topk rank.py stochastic -- --work-dir /tmp/hunt45data/rank_e
./against.sh warmup.rare_f32.beyond2 stochastic warmup_contrastive train_pairs.py warmup.rare_f32.stochastic.py --trace-time 5 -- --data-dir /tmp/hunt45data/pairs_f --warmup 20000 --steps 20010
