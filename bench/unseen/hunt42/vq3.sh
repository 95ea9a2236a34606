#!/bin/bash
# the repros through verify (each under the lock inside vrepro.sh); started while vq2.sh ran, so their order interleaved
cd "$(dirname "$0")"
./vrepro.sh late_buffer stochastic
./vrepro.sh part_called_eval stochastic
./vrepro.sh part_called_eval amp
