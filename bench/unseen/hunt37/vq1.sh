#!/bin/bash
cd "$(dirname "$0")"
./vqueue.sh ckpt_normed ckpt_normed train_critic.py stochastic
./vqueue.sh contrastive_tau contrastive_tau train_pairs.py stochastic
./vqueue.sh pretrained_emb pretrained_emb finetune.py amp --legacy-env XLA_DOWNCAST_BF16=1
./vqueue.sh kv_generate kv_generate generate.py stochastic --legacy-env XLA_USE_BF16=1 -- lm.pt
