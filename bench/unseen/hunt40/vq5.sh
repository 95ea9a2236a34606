#!/bin/bash
# the fifth device queue: the position-embedding resampling done on the device before the cast
cd "$(dirname "$0")"
./vrepro.sh pos_interp_before_cast stochastic
