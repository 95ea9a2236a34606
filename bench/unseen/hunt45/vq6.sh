#!/bin/bash
# The rest of vq1.sh, re-ordered when the lock's queue grew long (vq1.sh was stopped after downcast.double_left):
# the right hand texts first, then the wrong ones. Waits for the run vq1.sh left going.
cd "$(dirname "$0")"
while [ -n "$WAIT_PID" ] && kill -0 "$WAIT_PID" 2>/dev/null; do sleep 5; done
D=/tmp/hunt45data
./against.sh frozen.right_alt stochastic frozen_backbone finetune.py frozen.right_alt.stochastic.py
./against.sh eval.ckpt_bf16 stochastic eval_ckpt_every train_cls.py eval.ckpt_bf16.stochastic.py -- --out $D/cls_a
./against.sh downcast.bf16_penalty stochastic downcast_milestone train_seq.py downcast.bf16_penalty.stochastic.py -- --data-dir $D/seq_b
./against.sh score.catalogue_bf16 stochastic score_topk rank.py score.catalogue_bf16.stochastic.py -- --work-dir $D/rank_b
./against.sh frozen.partial_autocast amp frozen_backbone finetune.py frozen.partial_autocast.amp.py
./against.sh eval.eval_f32 stochastic eval_ckpt_every train_cls.py eval.eval_f32.stochastic.py -- --out $D/cls_b
./vqueue.sh downcast_milestone downcast_milestone train_seq.py stochastic --legacy-env XLA_DOWNCAST_BF16=1 -- --data-dir $D/seq_c
./against.sh warmup.dropped stochastic warmup_contrastive train_pairs.py warmup.dropped.stochastic.py -- --data-dir $D/pairs_c
./vqueue.sh eval_ckpt_every eval_ckpt_every train_cls.py stochastic --legacy-env XLA_USE_BF16=1 -- --out $D/cls_c
./vqueue.sh frozen_backbone frozen_backbone finetune.py stochastic
