#!/bin/bash
# points_shared_env/variant: verify PASSes stochastic/gpu-compatible; run legacy and the migration to the end by hand and
# compare what they hand the host: the whole-module checkpoint's dtype, the CPU re-evaluation, head.bin's size
# -> verify_logs/points_shared_env.outputs.txt
cd /work/wt/hunt13/bench/unseen/hunt13
# first pass (all modes): torch.load of the migrated model_full.pt fails in another process (the pickled input hook);
# with MODES=... and STUBS=1 the reader defines the hook names first, to read the dtypes
O=verify_logs/points_shared_env.outputs${STUBS:+.stubs}.txt
: > $O
for m in ${MODES:-legacy stochastic gpu-compatible amp}; do
  T=$(mktemp -d); cp points_shared_env/variant/*.py $T/
  if [ $m = legacy ]; then ENVV="XLA_USE_BF16=1"; else ENVV="XLA_USE_BF16=0"
    PYTHONPATH=/work/wt/hunt13 /work/main/.venv/bin/python -m bf16_migrate $T/train_points.py --mode $m --legacy-env XLA_USE_BF16=1 > /dev/null 2>&1; fi
  { echo "== $m ($ENVV)"
    (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $ENVV timeout 600 /work/main/.venv/bin/python train_points.py 2>&1 | grep -v -i "warn\|mark_step\|deprecat")
    (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU STUBS=$STUBS /work/main/.venv/bin/python -c "
import json, os, torch, torch_xla, numpy as np
if os.environ.get('STUBS'):
    bf16_inputs_hook = float32_inputs_hook = lambda *a, **k: None
m = torch.load('ckpt/model_full.pt', weights_only=False)
print('model_full.pt: params', sorted({str(p.dtype) for p in m.parameters()}), 'on', next(m.parameters()).device)
print('head.bin bytes', os.path.getsize('ckpt/head.bin'), '(float32 would be', 8 + 4 * (4 * 32 + 4), ')')
print('summary.json', json.load(open('ckpt/summary.json')))
print('test_probs.npy', np.load('ckpt/test_probs.npy').dtype)
" 2>&1 | grep -v -i warn)
  } >> $O 2>&1
  echo "$m done"
done
