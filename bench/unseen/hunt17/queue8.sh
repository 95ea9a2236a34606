#!/bin/bash
cd "$(dirname "$0")"
./vrun.sh r_autograd_grad_loss_scale stochastic bench/unseen/hunt17/repros/r_autograd_grad_loss_scale.py --steps 6
