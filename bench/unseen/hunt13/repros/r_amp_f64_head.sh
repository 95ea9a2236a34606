#!/bin/bash
# lt_downcast_procfile amp: the loss per step of the FP32 reference (the script without the switch), the legacy run
# (XLA_DOWNCAST_BF16=1), the amp migration, and the amp migration with the head's forward under
# torch.autocast("xla", enabled=False) (the head kept f32 as the legacy run had it) -> verify_logs/repro.r_amp_f64_head.txt
cd /work/wt/hunt13/bench/unseen/hunt13
T=$(mktemp -d); S=lt_downcast_procfile/train_lt.py
sed 's/if step % 10 == 0:/if True:/' $S > $T/orig.py
PYTHONPATH=/work/wt/hunt13 /work/main/.venv/bin/python -m bf16_migrate - --stdin-filename $S --mode amp --legacy-env XLA_DOWNCAST_BF16=1 < $T/orig.py > $T/amp.py 2>/dev/null
sed 's/        return self.head(self.body(x).float())/        h = self.body(x).float()\n        with torch.autocast("xla", enabled=False):\n            return self.head(h)/' $T/amp.py > $T/amp_headf32.py
grep -n -A2 "return self.head\|h = self.body" $T/amp_headf32.py | head
O=verify_logs/repro.r_amp_f64_head.txt; : > $O
for r in "fp32-ref orig.py" "legacy orig.py XLA_DOWNCAST_BF16=1" "amp amp.py" "amp+head-f32 amp_headf32.py"; do
  set -- $r
  echo "== $1" >> $O
  (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $3 /work/main/.venv/bin/python $2 --steps 12 2>&1 | grep "^step" | awk '{printf "%s ", $4} END {print ""}') >> $O
done
cat $O
