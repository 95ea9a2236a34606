#!/bin/bash
# usage: hunt40/after57/vq57.sh: verify (XLA CPU device, under the lock, --steps 4) the legacy repro copies of the fixed
# gaps of hunt40-42 -> HUNT/after57/repro.NAME.MODE.verify.txt. Copies in /tmp/rejudge57/v/HUNT.NAME.MODE.
U=$(cd "$(dirname "$0")/../.." && pwd); ROOT=$(git -C "$U" rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
[ -n "$U" ] && [ -n "$ROOT" ] || exit 1
run() {  # HUNT NAME MODE
  H=$1; N=$2; M=$3; T=/tmp/rejudge57/v/$H.$N.$M; O=$U/$H/after57/repro.$N.$M.verify.txt
  [ -n "$H" ] && [ -n "$N" ] && [ -n "$M" ] || return 1
  rm -rf "$T"; mkdir -p "$T"; cp -r "$U/$H/repros/$N"/. "$T"/
  (cd "$T" && git init -q && git add -A && git -c user.email=r@x -c user.name=r commit -qm legacy \
   && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 "$PY" -m bf16_migrate verify repro.py --mode "$M" --steps 4 > "$O" 2>&1; echo "exit $?" >> "$O")
  echo "$(date +%T) $H $N $M: $(grep -E '^VERDICT|VERDICT' "$O" | head -1) $(tail -1 "$O")"
}
run hunt40 wrapper_param_after_cast stochastic
run hunt41 downcast_float_weight stochastic
run hunt42 late_buffer stochastic
run hunt42 part_called_eval stochastic
run hunt42 part_called_eval amp
run hunt40 pos_interp_before_cast stochastic
run hunt40 head_init_scale_before_cast stochastic
run hunt41 comprehension_clone stochastic
run hunt41 ckpt_counter_to_device stochastic
run hunt41 tensor_list_in_stack stochastic
run hunt41 downcast_f64_input_hook stochastic
echo DONE
