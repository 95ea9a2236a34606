#!/bin/bash
# device run of gap 2's repro in amp (does verify see the explicit-f32 module computing outside autocast?)
cd "$(dirname "$0")"
./vrepro.sh explicit_f32_module amp
./vrepro.sh ctx_helper_batch stochastic
