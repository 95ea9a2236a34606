#!/bin/bash
cd "$(dirname "$0")"
repros/run_against.sh topk_ids retrieve.py retrieve.right.py
repros/sr_launcher/check.sh
