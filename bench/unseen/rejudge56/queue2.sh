#!/bin/bash
cd /work/wt/rejudge56/bench/unseen/rejudge56
while pgrep -f "rejudge56/queue1.sh" >/dev/null; do sleep 5; done
# regression check: hunt38's amp migration of svm_multimargin (older commit) against the legacy text, now refused in amp
O=verify_logs/h38.svm_multimargin_oldamp.amp.verify.txt
(cd /tmp/rj56s/svm_amp_old && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/rejudge56 timeout 900 /work/main/.venv/bin/python -m bf16_migrate verify train.py --against HEAD --mode amp --steps 6 > /work/wt/rejudge56/bench/unseen/rejudge56/$O 2>&1; echo "exit $?" >> /work/wt/rejudge56/bench/unseen/rejudge56/$O)
echo "== svm_multimargin_oldamp"; grep -E "VERDICT|^exit" $O
./vrun.sh h37.ckpt_normed_xla /tmp/rj56src/ckpt_normed_xla train_critic.py stochastic
./vrun.sh h37.infer_csv /work/wt/rejudge56/bench/unseen/hunt37/cases/infer_csv predict.py stochastic --legacy-env XLA_USE_BF16=1 -- churn.pt
./vrun.sh h37.contrastive_tau /work/wt/rejudge56/bench/unseen/hunt37/cases/contrastive_tau train_pairs.py stochastic
./vrun.sh p.modulelist_index probes/modulelist_index repro.py stochastic
