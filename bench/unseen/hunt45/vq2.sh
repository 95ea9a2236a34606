#!/bin/bash
# Device runs of the repros (each waits on /tmp/bfm-xla.lock).
cd "$(dirname "$0")"
./vrepro.sh loss_in_branch_amp amp
