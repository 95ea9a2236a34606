#!/bin/bash
# One more amp hand text, run while time was left.
cd "$(dirname "$0")"
OUT_DIR=/tmp/hunt45data/probe ./against.sh frozen.partial_autocast amp frozen_backbone finetune.py frozen.partial_autocast.amp.py
