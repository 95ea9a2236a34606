#!/bin/bash
# runtool.sh NAME SRC_DIR : SRC_DIR is a scratch tree (real files at a commit, under /tmp/hunt51).
# For each mode: --diff (logs/NAME.MODE.diff + .stderr + rc), then migrate on a copy (/tmp/hunt51/run/NAME.MODE),
# a second migrate (idempotence: logs/NAME.MODE.second.txt), ast re-parse of every .py, and `git diff --stat`.
set -u
NAME=$1; SRC=$2
H=/work/wt/hunt51/bench/unseen/hunt51
PY=/work/main/.venv/bin/python
export PYTHONPATH=/work/wt/hunt51
for MODE in stochastic gpu-compatible amp; do
  (cd "$SRC" && $PY -m bf16_migrate . --mode $MODE --diff --output-format text > $H/logs/$NAME.$MODE.diff 2> $H/logs/$NAME.$MODE.stderr; echo "diff rc=$?" > $H/logs/$NAME.$MODE.rc)
  D=/tmp/hunt51/run/$NAME.$MODE
  rm -rf "$D"; mkdir -p "$(dirname "$D")"; cp -a "$SRC" "$D"
  (cd "$D" && $PY -m bf16_migrate migrate . --mode $MODE > $H/logs/$NAME.$MODE.migrate.txt 2>&1; echo "migrate rc=$?" >> $H/logs/$NAME.$MODE.rc)
  (cd "$D" && git add -A && git -c user.email=h@h -c user.name=h commit -qm first >/dev/null;
   $PY -m bf16_migrate migrate . --mode $MODE > $H/logs/$NAME.$MODE.second.txt 2>&1; echo "second rc=$?" >> $H/logs/$NAME.$MODE.rc;
   echo "second-run changed lines: $(git diff --numstat | awk '{s+=$1+$2} END {print s+0}')" >> $H/logs/$NAME.$MODE.rc;
   git diff HEAD~1 --stat | tail -1 >> $H/logs/$NAME.$MODE.rc)
  (cd "$D" && find . -name '*.py' -not -path './.git/*' | while read -r f; do
     $PY -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$f" 2>/dev/null || echo "REPARSE FAIL $f"; done >> $H/logs/$NAME.$MODE.rc)
  grep -l "internal error" $H/logs/$NAME.$MODE.* 2>/dev/null | sed 's/^/INTERNAL ERROR in /' >> $H/logs/$NAME.$MODE.rc
done
