#!/bin/bash
# Part 3: verify the pytorch/xla MNIST test (d517649b) in the three modes on the XLA CPU device.
# torchvision is not installed in the venv: a two-module stub (empty datasets/transforms, unused under --fake_data)
# is written to /tmp/hunt51/tvstub and put on PYTHONPATH.
set -u
H=/work/wt/hunt51/bench/unseen/hunt51
M=/work/.mirror/pytorch+xla/repo
C=d517649bdef6ab0519c30c704bde8779c8216502
mkdir -p /tmp/hunt51/tvstub/torchvision
printf 'from . import datasets, transforms\n' > /tmp/hunt51/tvstub/torchvision/__init__.py
: > /tmp/hunt51/tvstub/torchvision/datasets.py
: > /tmp/hunt51/tvstub/torchvision/transforms.py
for MODE in stochastic gpu-compatible amp; do
  D=/tmp/hunt51/mnist.$MODE
  rm -rf "$D"; mkdir -p "$D"
  git --git-dir=$M show $C:test/test_train_mp_mnist.py > "$D/test_train_mp_mnist.py"
  git --git-dir=$M show $C:test/args_parse.py > "$D/args_parse.py"
  (cd "$D" && git init -q && git add -A && git -c user.email=h@h -c user.name=h commit -qm legacy)
  (cd "$D" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt51:/tmp/hunt51/tvstub timeout 1500 \
     /work/main/.venv/bin/python -m bf16_migrate verify test_train_mp_mnist.py --mode $MODE --steps 8 \
     --legacy-env XLA_USE_BF16=1 -- --fake_data --num_epochs=1 --batch_size=128 --num_cores=1 --target_accuracy=0 --log_steps=5) \
     > $H/verify_logs/mnist.$MODE.verify.txt 2>&1
  echo "$MODE rc=$?" >> $H/verify_logs/mnist.rc.txt
done
