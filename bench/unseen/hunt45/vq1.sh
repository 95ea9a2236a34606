#!/bin/bash
# The device runs of this hunt (each waits on /tmp/bfm-xla.lock). This script was stopped after its 5th run
# (downcast.double_left) when the lock's queue grew long; vq6.sh holds the rest, re-ordered. Rerun: vq1.sh (its first
# five lines), vq2.sh, vq3.sh, vq4.sh, vq5.sh, vq6.sh.
cd "$(dirname "$0")"
D=/tmp/hunt45data
./vqueue.sh warmup_contrastive warmup_contrastive train_pairs.py amp -- --data-dir $D/pairs_a
./against.sh warmup.rare_f32 stochastic warmup_contrastive train_pairs.py warmup.rare_f32.stochastic.py -- --data-dir $D/pairs_b
./against.sh frozen.backbone_f32 stochastic frozen_backbone finetune.py frozen.backbone_f32.stochastic.py
./against.sh score.query_f32 stochastic score_topk rank.py score.query_f32.stochastic.py -- --work-dir $D/rank_a
./against.sh downcast.double_left stochastic downcast_milestone train_seq.py downcast.double_left.stochastic.py -- --data-dir $D/seq_a
./against.sh eval.ckpt_bf16 stochastic eval_ckpt_every train_cls.py eval.ckpt_bf16.stochastic.py -- --out $D/cls_a
./against.sh score.catalogue_bf16 stochastic score_topk rank.py score.catalogue_bf16.stochastic.py -- --work-dir $D/rank_b
./against.sh frozen.right_alt stochastic frozen_backbone finetune.py frozen.right_alt.stochastic.py
./against.sh downcast.bf16_penalty stochastic downcast_milestone train_seq.py downcast.bf16_penalty.stochastic.py -- --data-dir $D/seq_b
./against.sh frozen.partial_autocast amp frozen_backbone finetune.py frozen.partial_autocast.amp.py
./against.sh eval.eval_f32 stochastic eval_ckpt_every train_cls.py eval.eval_f32.stochastic.py -- --out $D/cls_b
./vqueue.sh downcast_milestone downcast_milestone train_seq.py stochastic --legacy-env XLA_DOWNCAST_BF16=1 -- --data-dir $D/seq_c
./vqueue.sh score_topk score_topk rank.py stochastic -- --work-dir $D/rank_c
./against.sh warmup.dropped stochastic warmup_contrastive train_pairs.py warmup.dropped.stochastic.py -- --data-dir $D/pairs_c
./vqueue.sh eval_ckpt_every eval_ckpt_every train_cls.py stochastic --legacy-env XLA_USE_BF16=1 -- --out $D/cls_c
./vqueue.sh frozen_backbone frozen_backbone finetune.py stochastic
