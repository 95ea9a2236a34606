#!/bin/bash
# second verify queue of hunt9 (quantile_docker_run, added later) and device probes
cd /work/wt/hunt9/bench/unseen/hunt9
H=bench/unseen/hunt9
L=verify_logs
for e in X=0 XLA_USE_BF16=1; do
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $e /work/main/.venv/bin/python repros/probe_quantile.py > $L/probe_quantile.$e.txt 2>&1
done
./lrun.sh quantile_docker_run quantile_docker_run forecast.py XLA_USE_BF16=1
./lrun.sh spectral_gcloud spectral_gcloud denoise.py XLA_DOWNCAST_BF16=1
while read -r label mode script rest; do
  [ -z "$label" ] && continue
  ./vrun.sh "$label" "$mode" "$H/$script" $rest
done <<'Q'
quantile_docker_run.py-only stochastic quantile_docker_run/forecast.py --legacy-env XLA_USE_BF16=1
quantile_docker_run.py-only amp quantile_docker_run/forecast.py --legacy-env XLA_USE_BF16=1
quantile_docker_run.py-only gpu-compatible quantile_docker_run/forecast.py --legacy-env XLA_USE_BF16=1
Q
