#!/bin/bash
# static re-run of the three hunts' cases at this worktree's package: new diffs/texts under static/, compared with the
# hunts' saved outputs (cmp lines in static/summary.txt); idempotence (second run) and ast.parse of every output.
R=/work/wt/rejudge; U=bench/unseen; PY=/work/main/.venv/bin/python; S=$R/$U/rejudge55/static
cd $R
bfm() { PYTHONPATH=$R "$PY" -m bf16_migrate "$@"; }
SUM=$S/summary.txt; : > $SUM
# hunt34: stdin per script
h34() { local spec=$1; set -- $spec; local F=$1; shift
  for m in stochastic gpu-compatible amp; do
    local lab=$(echo ${F%.py} | tr / _); local O=$S/h34/$lab.$m.mig.py; mkdir -p $S/h34
    bfm - --mode $m --stdin-filename $U/hunt34/$F "$@" < $U/hunt34/$F > $O 2> $S/h34/$lab.$m.stderr; rc=$?
    bfm - --mode $m --stdin-filename $U/hunt34/$F "$@" < $O > /tmp/rj55_idem.py 2>/dev/null
    n=$(diff $O /tmp/rj55_idem.py | wc -l); "$PY" -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" $O && p=ok || p=FAIL
    old=$U/hunt34/${F%.py}.$m.mig.py
    if [ -f $old ]; then diff -u $old $O > $S/h34/$lab.$m.vsold.diff; d=$(grep -c '^[-+][^-+]' $S/h34/$lab.$m.vsold.diff); else d=NA; fi
    echo "h34 $F $m rc=$rc changed-vs-hunt=$d second-run=$n parse=$p" | tee -a $SUM
  done; }
for spec in "cases/hook_feats/train_probe.py" "cases/hook_plain/train_probe.py" "cases/ppo_orth/ppo.py" "cases/ppo_nofloat/ppo.py" "cases/ste_quant/qat.py" \
  "cases/ste_mask/qat.py" "cases/welford_norm/value_fit.py" "cases/sam_trainer/train_sam.py" \
  "scriptonly/xbm/train_xbm.py --legacy-env XLA_USE_BF16=1" "scriptonly/dtype/train_rnn.py --legacy-env XLA_USE_BF16=1" \
  "cases/carriers/setupcfg/train.py"; do h34 "$spec"; done
# tree runs (--diff on a directory), compared with a hunt's saved LABEL.MODE.diff; copy migrated, second run
tree() { local H=$1 LAB=$2 C=$3; shift 3
  for m in stochastic gpu-compatible amp; do
    mkdir -p $S/$H; bfm $U/$H/cases/$C --mode $m --diff "$@" > $S/$H/$LAB.$m.diff 2> $S/$H/$LAB.$m.stderr; rc=$?
    old=$U/$H/verify_logs/$LAB.$m.diff
    if [ -f $old ]; then diff $old $S/$H/$LAB.$m.diff > $S/$H/$LAB.$m.vsold.diff; d=$(grep -c '^[<>] [-+][^-+]' $S/$H/$LAB.$m.vsold.diff); else d=NA; fi
    T=$R/$U/rejudge55/scratch/mig/$H.$LAB.$m; rm -rf $T; mkdir -p $(dirname $T); top=${C%%/*}; sub=.; [ -f $U/$H/cases/$C ] && sub=${C#*/}
    [ -f $U/$H/cases/$C ] && cp -a $U/$H/cases/$top $T || cp -a $U/$H/cases/$C $T
    (cd $T && PYTHONPATH=$R "$PY" -m bf16_migrate $sub --mode $m "$@" > /dev/null 2>&1)
    n=$(cd $T && PYTHONPATH=$R "$PY" -m bf16_migrate $sub --mode $m --diff "$@" 2>/dev/null | wc -l)
    p=ok; for f in $(find $T -name '*.py'); do "$PY" -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" $f 2>/dev/null || p="FAIL:$f"; done
    echo "$H $LAB $m rc=$rc changed-vs-hunt=$d second-run=$n parse=$p $(grep -o 'bf16-migrate: .*' $S/$H/$LAB.$m.stderr | tail -1)" | tee -a $SUM
  done; }
tree hunt34 hook_feats hook_feats; tree hunt34 xbm_bank xbm_bank; tree hunt34 dtype_cfg dtype_cfg
tree hunt34 car_setupcfg carriers/setupcfg; tree hunt34 car_make_target carriers/make_target; tree hunt34 car_envfile_docker carriers/envfile_docker
tree hunt34 ppo_nofloat ppo_nofloat
for c in retrieval_index calib_lbfgs eval_host_metrics rl_polyak balanced_smooth batch_predict; do tree hunt35 $c $c; done
tree hunt36 argf argparse_flag; tree hunt36 argp argparse_precision; tree hunt36 cbs callbacks_npy; tree hunt36 cli srcpkg_cli
tree hunt36 cli_le srcpkg_cli/src/specnet/training.py --legacy-env XLA_USE_BF16=1
tree hunt36 conft conftest_switch; tree hunt36 envmod env_module; tree hunt36 inj trainer_injected; tree hunt36 lit lit_engine
tree hunt36 pipe pipeline_launcher; tree hunt36 split trainer_split; tree hunt36 srcpkg srcpkg_make; tree hunt36 yamlcfg yaml_cfg
tree hunt36 yamlcfg_le yaml_cfg --legacy-env XLA_USE_BF16=1; tree hunt36 yamlprec yaml_precision
