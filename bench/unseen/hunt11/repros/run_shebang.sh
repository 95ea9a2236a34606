#!/bin/bash
# usage: repros/run_shebang.sh: run r_shebang_env_s.py through its #! line (under the XLA lock), then ask
# bf16-migrate about it (and an extensionless copy) in each mode -> verify_logs/repro.r_shebang_env_s.txt
cd /work/wt/hunt11
R=bench/unseen/hunt11/repros
{
  echo "== ./r_shebang_env_s.py (through its #! line; PATH starts with the venv)"
  (cd $R && flock /tmp/bfm-xla.lock env PATH=/work/main/.venv/bin:$PATH PJRT_DEVICE=CPU ./r_shebang_env_s.py 2>&1 | grep -v -i "warn\|deprecat")
  for f in r_shebang_env_s.py r_shebang_env_s_noext; do
    for m in stochastic gpu-compatible amp; do
      echo "== bf16-migrate $R/$f --mode $m --check"
      PYTHONPATH=/work/wt/hunt11 /work/main/.venv/bin/python -m bf16_migrate $R/$f --mode $m --check 2>&1
      echo "exit $?"
    done
  done
} > bench/unseen/hunt11/verify_logs/repro.r_shebang_env_s.txt 2>&1
echo done
