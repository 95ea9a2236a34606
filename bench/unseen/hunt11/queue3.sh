#!/bin/bash
# third batch: the variants added after the first reading (seg: the model built in main; lengths: the mask fixed
# by hand as BFM081 asks, the switch given by the launcher instead of settings.py)
cd /work/wt/hunt11/bench/unseen/hunt11
H=bench/unseen/hunt11
for m in stochastic gpu-compatible amp; do
  ./vrun.sh seg_patchdict.ctor_variant $m $H/seg_patchdict/ctor_variant/seg_eval.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh lengths_cfgmodule.mask_variant $m $H/lengths_cfgmodule/mask_variant/train_lengths.py --legacy-env XLA_USE_BF16=1
done
