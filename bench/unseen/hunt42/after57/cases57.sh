#!/bin/bash
# usage: HUNT/after57/cases57.sh: every case of HUNT (and the extra labels below) --diff in the three modes, from the
# worktree root as drun.sh does -> after57/LABEL.MODE.diff (compare with verify_logs/LABEL.MODE.diff); then a migrated
# copy (/tmp/rejudge57/c/HUNT/LABEL.MODE) migrated a second time: changed lines and ast.parse -> after57/idempotence.txt
A=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$A"); HN=$(basename "$H"); ROOT=$(git -C "$H" rev-parse --show-toplevel)
PY=/work/main/.venv/bin/python; REL=${H#"$ROOT"/}
[ -n "$HN" ] && [ -n "$ROOT" ] && [ -d "$H/cases" ] || exit 1
one() {  # LABEL CASE [FILE-in-case] [options]
  L=$1; C=$2; F=$3; shift 3
  for m in stochastic gpu-compatible amp; do
    P=$REL/cases/$C; [ -n "$F" ] && P=$P/$F
    (cd "$ROOT" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate "$P" --mode $m --diff "$@" > "$A/$L.$m.diff" 2> "$A/$L.$m.stderr")
    T=/tmp/rejudge57/c/$HN/$L.$m; rm -rf "$T"; mkdir -p "$T"; cp -r "$H/cases/$C"/. "$T"/
    Q=.; [ -n "$F" ] && Q=$F
    (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate "$Q" --mode $m "$@" > /dev/null 2>&1)
    n=$(cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate "$Q" --mode $m --diff "$@" 2>/dev/null | grep -c '^[-+][^-+]')
    p=$(cd "$T" && "$PY" -c "import ast,pathlib,sys; bad=[str(f) for f in pathlib.Path('.').rglob('*.py') if not (lambda s: (ast.parse(s), True))(f.read_text())]; print('parse ok' if not bad else bad)" 2>&1 | tail -1)
    echo "$L $m: second migrate changes $n lines; $p" >> "$A/idempotence.txt"
  done
}
rm -f "$A/idempotence.txt"
for c in $(ls "$H/cases"); do one "$c" "$c" ""; done
[ "$HN" = hunt40 ] && one gnn_scatter_py gnn_scatter gat.py --legacy-env XLA_USE_BF16=1
[ "$HN" = hunt41 ] && one mp_resume_le mp_resume train_mp.py --legacy-env XLA_USE_BF16=1
cat "$A/idempotence.txt"
