#!/bin/bash
# the codemod's own migrations through verify, one after another (each under the lock inside vqueue.sh)
cd "$(dirname "$0")"
./vqueue.sh dino_center dino_center train_dino.py stochastic
./vqueue.sh fourier_buffer fourier_buffer fit_image.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh contrastive_helper contrastive_helper train_simclr.py stochastic
./vqueue.sh vq_codebook vq_codebook train_vq.py stochastic
./vqueue.sh embed_dump embed_dump dump_embeddings.py stochastic -- /tmp/hunt42_dumpv
