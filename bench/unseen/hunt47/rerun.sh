#!/bin/bash
# Reruns every verdict of this hunt, from the worktree this directory lies in. Static parts first (seconds), then the
# device runs (each waits on /tmp/bfm-xla.lock; about 25 min in all on a shared 2-core machine).
set -u
cd "$(dirname "$0")"
H=$PWD; ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
CASES="spectral_mixer:train_mixer.py spectral_mixer_f32fft:train_mixer.py fourier_coords:train_field.py welford_norm:train_norm.py fakequant_counts:train_qat.py multihead_metrics:train_multi.py multihead_quantile_f32:train_multi.py"
# 1. the codemod's migrations (bases of hand/), the diffs, the stub runs, idempotence and re-parse
mkdir -p /tmp/hunt47mig
for cf in $CASES; do
  c=${cf%%:*}; f=${cf#*:}
  ./drun.sh "$c" "bench/unseen/hunt47/cases/$c"
  STEPS=3 TAILN=4 repros/run_stub.sh "$c" "cases/$c" "$f" > /dev/null 2>&1
  for m in stochastic gpu-compatible amp; do
    T=/tmp/hunt47mig/$c.$m; rm -rf "$T"; cp -r "cases/$c" "$T"
    (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m > /dev/null 2>&1)
    (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate . --mode $m --diff > /tmp/hunt47_idem.diff 2>/dev/null; echo "$c.$m second migrate rc=$? changed lines=$(grep -c '^[-+][^-+]' /tmp/hunt47_idem.diff)"; for p in ./*.py; do "$PY" -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$p" || echo "PARSE FAIL $p"; done)
  done
done
"$PY" make_hand.py
for t in fourier.B_f32:fourier_coords:train_field.py fourier.encode_f32:fourier_coords:train_field.py welford.stats_f32:welford_norm:train_norm.py welford.cumsum_f32:welford_norm:train_norm.py fq.onehot_f32:fakequant_counts:train_qat.py fq.scales_f32:fakequant_counts:train_qat.py fq.rates_host:fakequant_counts:train_qat.py spectral.right_f32fft:spectral_mixer:train_mixer.py spectral.fft_out_f32:spectral_mixer:train_mixer.py multi.hist_f32:multihead_quantile_f32:train_multi.py multi.mask_1e9:multihead_quantile_f32:train_multi.py; do
  IFS=: read -r a b c <<< "$t"; ./handstub.sh "$a.stochastic.py" "$b" "$c"
done
./handstub.sh spectral.amp_plain.amp.py spectral_mixer train_mixer.py
repros/irfft_complex_operand/run.sh > verify_logs/repro.irfft_complex_operand.static.txt 2>&1
STEPS=2 repros/run_repro_stub.sh repros/complex_param_cast stochastic
STEPS=2 repros/run_repro_stub.sh repros/amp_metric_matmul amp
[ "${STATIC_ONLY:-0}" = 1 ] && exit 0  # STATIC_ONLY=1 ./rerun.sh: the static part only
# 2. the device runs
./vq1.sh; ./vq2.sh; ./vq3.sh; ./vq5.sh; ./vq6.sh
repros/amp_cpu_scalar_tensor/run.sh
probes/scalar_hlo.sh
probes/welford_amp_bisect.sh
PSTEPS=24 probes/compiles.sh welford_migrated24 /tmp/hunt47mig/welford_norm.stochastic train_norm.py
PSTEPS=24 probes/compiles.sh welford_legacy24 "$H/cases/welford_norm" train_norm.py
