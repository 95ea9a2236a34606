#!/bin/bash
# the cases the lead's fixes changed, verified again with /work/main (stop 48)
cd /work/main/bench/unseen/hunt13
H=bench/unseen/hunt13
./vrun_main.sh seqdepth_taskfile.py-only stochastic $H/seqdepth_taskfile/train_intent.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh hybrid_envrc.py-only stochastic $H/hybrid_envrc/train_ctr.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh swish_conftest.py-only amp $H/swish_conftest/train_swish.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh points_shared_env.variant stochastic $H/points_shared_env/variant/train_points.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh points_shared_env.variant amp $H/points_shared_env/variant/train_points.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh lt_downcast_procfile.py-only stochastic $H/lt_downcast_procfile/train_lt.py --legacy-env XLA_DOWNCAST_BF16=1
# the hunt's own (wrong) stochastic migration of hybrid_envrc (the rewrite at a8b9199, casting the CPU table),
# judged by the verify of /work/main: its precision part now reads the host parameters
cd /work/main && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU /work/main/.venv/bin/python -c "
from pathlib import Path
from bf16_migrate.verify import verify_script
r = verify_script(Path('bench/unseen/hunt13/hybrid_envrc/train_ctr.py'), 'stochastic', steps=12,
                  migrated_source=Path('/tmp/hybrid_old_migration.py').read_text(), legacy_env={'XLA_USE_BF16': '1'}, timeout=600)
print('VERDICT', r.verdict.status)
for p in r.verdict.parts: print(p.name, p.status, p.detail[:400])
" > bench/unseen/hunt13/verify_logs/after48.hybrid_envrc.old_migration.stochastic.txt 2>&1
echo "hybrid old migration done"
