#!/bin/bash
# swa_pkginit: verify cannot run it (G12); the migrated tree run by hand, as `python -m trainpkg.train`, per mode
# -> verify_logs/swa_pkginit.MODE.byhand.txt (stdout, the features file's dtype, the EMA's device dtype)
cd /work/wt/hunt12/bench/unseen/hunt12
for m in stochastic gpu-compatible amp; do
  T=$(mktemp -d); cp -r swa_pkginit/trainpkg $T/
  PYTHONPATH=/work/wt/hunt12 /work/main/.venv/bin/python -m bf16_migrate $T --mode $m > /dev/null 2>&1
  O=verify_logs/swa_pkginit.$m.byhand.txt
  { echo "== $m: the migrated tree, python -m trainpkg.train (PJRT_DEVICE=CPU, no legacy variable)"
    grep -n "XLA_USE_BF16\|NEURON_RT" $T/trainpkg/__init__.py
    (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 600 /work/main/.venv/bin/python -m trainpkg.train 2>&1 | grep -v -i "warn\|mark_step")
    /work/main/.venv/bin/python -c "import numpy as np; a = np.load('$T/out/ema_features.npy'); print('ema_features.npy', a.dtype, a.shape)"
  } > $O 2>&1
  echo "$m done"
done
