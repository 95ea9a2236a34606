#!/bin/bash
# the hand-made texts (hand/) through verify --against HEAD, one after another (each under the lock inside against.sh)
cd "$(dirname "$0")"
./against.sh dino.teacher_f32 stochastic dino_center train_dino.py dino.teacher_f32.stochastic.py
./against.sh dino.center_f32 stochastic dino_center train_dino.py dino.center_f32.stochastic.py
./against.sh dino.save_bf16 stochastic dino_center train_dino.py dino.save_bf16.stochastic.py
./against.sh dino.right_alt stochastic dino_center train_dino.py dino.right_alt.stochastic.py
./against.sh fourier.buffer_bf16 stochastic fourier_buffer fit_image.py fourier.buffer_bf16.stochastic.py --legacy-env XLA_USE_BF16=1
./against.sh contrastive.probe_bf16 stochastic contrastive_helper train_simclr.py contrastive.probe_bf16.stochastic.py
./against.sh contrastive.losses_eye_f32 stochastic contrastive_helper train_simclr.py contrastive.probe_bf16.stochastic.py,contrastive.losses_eye_f32.py@losses.py
./against.sh embed.margins_bf16 stochastic embed_dump dump_embeddings.py embed.margins_bf16.stochastic.py -- /tmp/hunt42_dumpa
./against.sh embed.mean_f32 stochastic embed_dump dump_embeddings.py embed.mean_f32.stochastic.py -- /tmp/hunt42_dumpa
./against.sh embed.switch_deleted stochastic embed_dump dump_embeddings.py embed.switch_deleted.py -- /tmp/hunt42_dumpa
./against.sh vq.codebook_f32 stochastic vq_codebook train_vq.py vq.codebook_f32.stochastic.py
./against.sh vq.numpy_bf16 stochastic vq_codebook train_vq.py vq.numpy_bf16.stochastic.py
./against.sh vq.right_alt stochastic vq_codebook train_vq.py vq.right_alt.stochastic.py
./against.sh fourier.render_f32 amp fourier_buffer fit_image.py fourier.render_f32.amp.py --legacy-env XLA_USE_BF16=1
./vqueue.sh contrastive_helper contrastive_helper train_simclr.py amp
./against.sh fourier.recast_after stochastic fourier_buffer fit_image.py fourier.recast_after.stochastic.py --legacy-env XLA_USE_BF16=1
