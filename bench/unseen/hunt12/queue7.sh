#!/bin/bash
# more repros (each under the XLA lock by run_repro.sh)
cd /work/wt/hunt12/bench/unseen/hunt12
./repros/run_repro.sh r_cond_cast_precedence stochastic
