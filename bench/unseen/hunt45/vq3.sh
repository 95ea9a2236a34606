#!/bin/bash
# Device runs of the second repro (waits on /tmp/bfm-xla.lock).
cd "$(dirname "$0")"
./vrepro.sh margin_loss_promoted_amp amp
