#!/bin/bash
# the eighth device queue: gap 2's second repro (a head's init scale applied on the device before the cast)
cd "$(dirname "$0")"
./vrepro.sh head_init_scale_before_cast stochastic
