#!/bin/bash
cd "$(dirname "$0")"
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=repros /work/main/.venv/bin/python repros/r_scalar_tensor_add_probe.py > verify_logs/repro.r_scalar_tensor_add_probe.txt 2>&1; echo "probe exit $?"
