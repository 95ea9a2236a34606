#!/bin/bash
# second batch of verify runs (flow's variant: the sampler's randn given the model's dtype by hand, as BFM081 asks)
cd /work/wt/hunt11/bench/unseen/hunt11
H=bench/unseen/hunt11
./vrun.sh flow_systemd.randn_variant stochastic $H/flow_systemd/randn_variant/flow.py --legacy-env XLA_DOWNCAST_BF16=1
./vrun.sh flow_systemd.randn_variant gpu-compatible $H/flow_systemd/randn_variant/flow.py --legacy-env XLA_DOWNCAST_BF16=1
