#!/bin/bash
# sixth batch: does verify see gap 4 (amp decoder in sampling.py outside autocast, after the recorded steps)?
cd "$(dirname "$0")"
./vqueue.sh vae_beta vae_beta vae.py amp --legacy-env XLA_USE_BF16=1
