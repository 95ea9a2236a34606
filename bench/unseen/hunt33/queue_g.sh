#!/bin/bash
# amp inference with no autocast at all (re-check of hunt27 gap 1b on a new script)
cd "$(dirname "$0")"
./against.sh IA1 amp cases/infer_np/predict.py wrong/IA1_no_autocast.py
