#!/bin/bash
cd "$(dirname "$0")"
while pgrep -f "vq1.sh" >/dev/null; do sleep 5; done
echo "## spectral_norm_metric stochastic"; ./vrepro.sh spectral_norm_metric stochastic
echo "## amp_f64_pretrained amp"; ./vrepro.sh amp_f64_pretrained amp
echo "## contrastive_tau fixed"; ./against.sh contrastive_tau.fixed stochastic contrastive_tau train_pairs.py contrastive_tau.fixed.stochastic.py
echo "## pinn codemod"; ./against.sh pinn_poisson.codemod stochastic pinn_poisson pinn.py -
echo "## pinn broken"; ./against.sh pinn_poisson.broken stochastic pinn_poisson pinn.py pinn_poisson.broken.stochastic.py
echo "## pretrained_emb fixed amp"; ./against.sh pretrained_emb.fixed amp pretrained_emb finetune.py pretrained_emb.fixed.amp.py
echo "## mdn codemod"; ./against.sh mdn_distributions.codemod stochastic mdn_distributions train_mdn.py -
