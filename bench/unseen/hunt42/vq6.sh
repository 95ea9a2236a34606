#!/bin/bash
# vq5.sh's first run again: its scratch copy had been removed by vq4.sh's last cleanup while it waited on the lock
cd "$(dirname "$0")"
./vrepro.sh part_called_after_train amp
