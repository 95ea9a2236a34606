#!/bin/bash
# The rare path beyond the trace: the same wrong text as warmup.rare_f32, with a warm-up of 400 steps and 10 s of trace
# after the 6 recorded steps (a long real run in small), so the contrastive phase is never reached by the trace.
cd "$(dirname "$0")"
./against.sh warmup.rare_f32.beyond stochastic warmup_contrastive train_pairs.py warmup.rare_f32.stochastic.py --trace-time 10 -- --data-dir /tmp/hunt45data/pairs_d --warmup 400 --steps 420
