#!/bin/bash
# usage: check_outputs.sh CASEDIR SCRIPT LEGACY_KV "ARGS" FILE...: runs the legacy script (LEGACY_KV set) and its
# stochastic and amp migrations to the end, each in a fresh copy of CASEDIR, under the XLA lock, and prints the
# dtypes/values of the files named -> verify_logs/CASEDIR.outputs.txt
D=$1; S=$2; KV=$3; A=$4; shift 4
H=/work/wt/hunt14/bench/unseen/hunt14
O=$H/verify_logs/$(echo $D | tr / _).outputs.txt
show() { /work/main/.venv/bin/python - "$@" <<'PY'
import json, sys, torch, numpy as np
for f in sys.argv[1:]:
    if f.endswith(".pt"):
        d = torch.load(f, map_location="cpu")
        print(f, {k: (str(v.dtype), round(float(v.double().mean()), 8)) for k, v in d.items()})
    elif f.endswith(".npy"):
        a = np.load(f); print(f, a.dtype, a.shape, float(a.astype(np.float64).mean()))
    elif f.endswith(".json"):
        d = json.load(open(f))
        if isinstance(d, dict) and "probs" in d:
            d["probs"] = d["probs"][:1]
        print(f, json.dumps(d)[:700])
    else:
        print(f, open(f).read()[:400])
PY
}
{
for run in legacy stochastic amp; do
  T=$(mktemp -d); cp -r $H/$D/. $T/; cd $T
  if [ $run = legacy ]; then E="$KV"; else
    PYTHONPATH=/work/wt/hunt14 /work/main/.venv/bin/python -m bf16_migrate - --stdin-filename $S --mode $run --legacy-env $KV < $H/$D/$S > $T/$S 2>/dev/null; E=""; fi
  echo "== $run"
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $E timeout 600 /work/main/.venv/bin/python $S $A 2>&1 | grep -v -i "warn\|xla_device\|mark_step" | tail -2
  show "$@"
done
} > $O 2>&1
echo done $O
