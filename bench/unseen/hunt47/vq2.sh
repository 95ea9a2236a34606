#!/bin/bash
# Device runs, batch 2: hand-made texts against the legacy case (verify --against HEAD), then the codemod's migration
# of the multihead case with its quantile made f32 by hand (what BFM155 asks for). Each waits on /tmp/bfm-xla.lock.
cd "$(dirname "$0")"
./against.sh spectral.right_f32fft stochastic spectral_mixer train_mixer.py spectral.right_f32fft.stochastic.py
./against.sh fq.scales_f32 stochastic fakequant_counts train_qat.py fq.scales_f32.stochastic.py
./against.sh welford.cumsum_f32 stochastic welford_norm train_norm.py welford.cumsum_f32.stochastic.py
./against.sh fourier.encode_f32 stochastic fourier_coords train_field.py fourier.encode_f32.stochastic.py --legacy-env XLA_USE_BF16=1
./vqueue.sh multihead_quantile_f32 multihead_quantile_f32 train_multi.py stochastic
./against.sh spectral.fft_out_f32 stochastic spectral_mixer train_mixer.py spectral.fft_out_f32.stochastic.py
./against.sh fq.onehot_f32 stochastic fakequant_counts train_qat.py fq.onehot_f32.stochastic.py
./against.sh welford.stats_f32 stochastic welford_norm train_norm.py welford.stats_f32.stochastic.py
./against.sh multi.hist_f32 stochastic multihead_quantile_f32 train_multi.py multi.hist_f32.stochastic.py
./against.sh spectral.dropped stochastic spectral_mixer train_mixer.py spectral.dropped.stochastic.py
./against.sh multi.mask_1e9 stochastic multihead_quantile_f32 train_multi.py multi.mask_1e9.stochastic.py
./against.sh fourier.B_f32 stochastic fourier_coords train_field.py fourier.B_f32.stochastic.py --legacy-env XLA_USE_BF16=1
