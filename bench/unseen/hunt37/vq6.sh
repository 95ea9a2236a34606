#!/bin/bash
cd "$(dirname "$0")"
while pgrep -f "vq5.sh" >/dev/null; do sleep 5; done
echo "## verify_sampling_scalar"; ./vrepro.sh verify_sampling_scalar stochastic
echo "## verify_unseeded_ckpt"; ./vrepro.sh verify_unseeded_ckpt stochastic
