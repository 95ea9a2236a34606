#!/bin/bash
# the rest of vq2.sh/vq3.sh after the session's shell restart killed them (and with /tmp nearly full: each run's
# scratch copy is removed before the next)
cd "$(dirname "$0")"
C() { rm -rf /tmp/hunt42s/* /tmp/hunt42vr/* /tmp/hunt42v/*; }
C; ./against.sh dino.right_alt stochastic dino_center train_dino.py dino.right_alt.stochastic.py
C; ./against.sh fourier.buffer_bf16 stochastic fourier_buffer fit_image.py fourier.buffer_bf16.stochastic.py --legacy-env XLA_USE_BF16=1
C; ./against.sh contrastive.probe_bf16 stochastic contrastive_helper train_simclr.py contrastive.probe_bf16.stochastic.py
C; ./against.sh contrastive.losses_eye_f32 stochastic contrastive_helper train_simclr.py contrastive.probe_bf16.stochastic.py,contrastive.losses_eye_f32.py@losses.py
C; ./against.sh embed.margins_bf16 stochastic embed_dump dump_embeddings.py embed.margins_bf16.stochastic.py -- /tmp/hunt42_dumpa
C; ./against.sh embed.switch_deleted stochastic embed_dump dump_embeddings.py embed.switch_deleted.py -- /tmp/hunt42_dumpa
C; ./against.sh vq.codebook_f32 stochastic vq_codebook train_vq.py vq.codebook_f32.stochastic.py
C; ./against.sh vq.numpy_bf16 stochastic vq_codebook train_vq.py vq.numpy_bf16.stochastic.py
C; ./against.sh fourier.render_f32 amp fourier_buffer fit_image.py fourier.render_f32.amp.py --legacy-env XLA_USE_BF16=1
C; ./vqueue.sh contrastive_helper contrastive_helper train_simclr.py amp
C; ./vrepro.sh part_called_eval amp
C; ./against.sh vq.right_alt stochastic vq_codebook train_vq.py vq.right_alt.stochastic.py
C; ./against.sh embed.mean_f32 stochastic embed_dump dump_embeddings.py embed.mean_f32.stochastic.py -- /tmp/hunt42_dumpa
C; ./against.sh fourier.recast_after stochastic fourier_buffer fit_image.py fourier.recast_after.stochastic.py --legacy-env XLA_USE_BF16=1
C
