#!/bin/bash
cd /work/wt/hunt12/bench/unseen/hunt12
LEGACY_ENV=XLA_USE_BF16=1 ./repros/run_repro.sh r_amp_embedding_scatter amp
