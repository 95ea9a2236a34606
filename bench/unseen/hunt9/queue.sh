#!/bin/bash
# the verify queue of hunt9, in order of what matters most (each verify takes the XLA lock by itself)
cd /work/wt/hunt9/bench/unseen/hunt9
H=bench/unseen/hunt9
while read -r label mode script rest; do
  [ -z "$label" ] && continue
  ./vrun.sh "$label" "$mode" "$H/$script" $rest
done <<'Q'
sr_nohup.py-only stochastic sr_nohup/train_sr.py --legacy-env XLA_USE_BF16=1
spectral_gcloud.py-only stochastic spectral_gcloud/denoise.py --legacy-env XLA_DOWNCAST_BF16=1
mha_envmodule.inline_variant stochastic mha_envmodule/inline_variant/train_cls.py
sac_tanh.inline_variant stochastic sac_tanh/inline_variant/sac.py
sac_tanh.inline_variant gpu-compatible sac_tanh/inline_variant/sac.py
ltr_sbatch.py-only stochastic ltr_sbatch/ltr.py --legacy-env XLA_USE_BF16=1
default_f64_downcast.xla_variant amp default_f64_downcast/xla_variant/fit_oscillator.py
vq_ema.inline_variant stochastic vq_ema/inline_variant/vqvae.py
spectral_gcloud.py-only amp spectral_gcloud/denoise.py --legacy-env XLA_DOWNCAST_BF16=1
mha_envmodule.inline_variant amp mha_envmodule/inline_variant/train_cls.py
sac_tanh.inline_variant amp sac_tanh/inline_variant/sac.py
ltr_sbatch.py-only amp ltr_sbatch/ltr.py --legacy-env XLA_USE_BF16=1
sr_nohup.py-only amp sr_nohup/train_sr.py --legacy-env XLA_USE_BF16=1
vq_ema.inline_variant amp vq_ema/inline_variant/vqvae.py
mha_envmodule.inline_variant gpu-compatible mha_envmodule/inline_variant/train_cls.py
ltr_sbatch.py-only gpu-compatible ltr_sbatch/ltr.py --legacy-env XLA_USE_BF16=1
vq_ema.inline_variant gpu-compatible vq_ema/inline_variant/vqvae.py
sr_nohup.py-only gpu-compatible sr_nohup/train_sr.py --legacy-env XLA_USE_BF16=1
spectral_gcloud.py-only gpu-compatible spectral_gcloud/denoise.py --legacy-env XLA_DOWNCAST_BF16=1
Q
