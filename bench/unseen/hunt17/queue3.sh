#!/bin/bash
cd "$(dirname "$0")"
while [ "$(wc -l < verify_logs/queue2.out)" -lt 4 ]; do sleep 5; done
P=/work/main/.venv/bin/python
(cd sam_compose && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 $P train_sam.py > ../verify_logs/sam_compose.legacy.txt 2>&1; echo "sam legacy exit $?")
(cd seg_bincount && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $P seg_train.py > ../verify_logs/seg_bincount.legacy.txt 2>&1; echo "seg legacy exit $?")
repros/run_repro.sh r_downcast_f64_target stochastic
repros/run_repro.sh r_explicit_f32_device_tensor stochastic
./vrun.sh sam_compose stochastic bench/unseen/hunt17/sam_compose/train_sam.py --legacy-env XLA_USE_BF16=1
./vrun.sh seg_bincount.variant stochastic bench/unseen/hunt17/seg_bincount/variant/seg_train.py --legacy-env XLA_USE_BF16=1
./vrun.sh sam_compose amp bench/unseen/hunt17/sam_compose/train_sam.py --legacy-env XLA_USE_BF16=1
./vrun.sh seg_bincount.variant amp bench/unseen/hunt17/seg_bincount/variant/seg_train.py --legacy-env XLA_USE_BF16=1
