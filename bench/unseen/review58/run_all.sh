#!/bin/bash
# usage: ./run_all.sh [CASE...]: for each case, migrate copies in the three modes under /tmp/review58/CASE.MODE,
# check re-parse + idempotence, then run unmigrated and migrated copies under the stub torch_xla.
# Output -> logs/CASE.MODE.txt (migrate summary, idempotence, run tail).
H=$(cd "$(dirname "$0")" && pwd); WT=$(git -C "$H" rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
STUB=$WT/bench/unseen/hunt_tools/stub; T=/tmp/review58; BIN=$T/bin
mkdir -p "$BIN" "$H/logs"
for b in python python3; do printf '#!/bin/bash\nexec env PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} %s "$@"\n' "$STUB" "$PY" > "$BIN/$b"; chmod +x "$BIN/$b"; done
declare -A CMD=(
  [step_helper]="python train.py"
  [dict_out_metric]="bash run.sh"
  [downcast_runmean]="OUT_DIR=\$PWD/out python train.py"
  [accum_savetxt]="bash launch.sh --out \$PWD/out"
  [cfg_smoothing]="python train.py"
  [masked_attn_infer]="python infer.py"
)
CASES=${*:-${!CMD[@]}}
for c in $CASES; do
  for m in unmigrated stochastic gpu-compatible amp; do
    C=$T/$c.$m; O=$H/logs/$c.$m.txt; echo "rm -rf C=$C; cp from $H/cases/$c"; rm -rf "$C"; cp -r "$H/cases/$c" "$C"
    {
      if [ $m != unmigrated ]; then
        echo "== migrate --mode $m"; (cd "$C" && PYTHONPATH=$WT $PY -m bf16_migrate migrate . --mode $m 2>&1 | tail -4)
        echo "== reparse"; for f in "$C"/*.py; do $PY -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$f" && echo "ok $(basename "$f")"; done
        echo "== second migrate --diff (exit 0 = no change)"; (cd "$C" && PYTHONPATH=$WT $PY -m bf16_migrate . --mode $m --diff >/dev/null 2>&1; echo "exit $?")
      fi
      echo "== run: ${CMD[$c]}"
      (cd "$C" && PATH=$BIN:$PATH STEPS=4 timeout 300 bash -c "${CMD[$c]}" 2>&1 | grep -v -i warn | tail -12)
    } > "$O" 2>&1
  done
done
