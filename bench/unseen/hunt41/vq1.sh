#!/bin/bash
# device queue 1 (each waits on /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
./vqueue.sh tabular_f64 tabular_f64 churn.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
./vresume.sh stochastic
./vqueue.sh lr_finder lr_finder lr_find.py stochastic --legacy-env XLA_USE_BF16=1 -- --trials 10 --steps 8
./vqueue.sh ckpt_average ckpt_average average.py stochastic --legacy-env XLA_USE_BF16=1 -- --ckpt-dir avg --out avg/averaged
./vqueue.sh pretrain_finetune pretrain_finetune pretrain_finetune.py stochastic
./vqueue.sh swa_bn swa_bn swa_train.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
./vqueue.sh eval_ckpt eval_ckpt evaluate_ckpt.py stochastic --legacy-env XLA_USE_BF16=1 -- --ckpt last.pt --metrics metrics.json
./vqueue.sh mp_resume mp_resume train_mp.py stochastic --legacy-env XLA_USE_BF16=1 -- --init init.pt --out final.pt --steps 8
for r in downcast_float_weight ckpt_counter_to_device tensor_list_in_stack comprehension_clone; do ./vrepro.sh $r stochastic; done
