#!/bin/bash
cd /work/wt/rejudge56/bench/unseen/rejudge56
./vrun.sh h37.moduledict_subscript_call /work/wt/rejudge56/bench/unseen/hunt37/repros/moduledict_subscript_call repro.py stochastic
./vrun.sh h37.spectral_norm_metric /work/wt/rejudge56/bench/unseen/hunt37/repros/spectral_norm_metric repro.py stochastic
./vrun.sh h37.external_param_call_fill /work/wt/rejudge56/bench/unseen/hunt37/repros/external_param_call_fill repro.py stochastic
./vrun.sh h37.verify_sampling_scalar /work/wt/rejudge56/bench/unseen/hunt37/repros/verify_sampling_scalar repro.py stochastic
./vrun.sh h37.verify_unseeded_ckpt /work/wt/rejudge56/bench/unseen/hunt37/repros/verify_unseeded_ckpt repro.py stochastic
./vrun.sh h38.ctc_loss_module /work/wt/rejudge56/bench/unseen/hunt38/repros/ctc_loss_module repro.py stochastic
./vrun.sh h38.studentt_rsample /work/wt/rejudge56/bench/unseen/hunt38/repros/studentt_rsample repro.py amp
./vrun.sh h37.kv_generate /work/wt/rejudge56/bench/unseen/hunt37/cases/kv_generate generate.py stochastic --legacy-env XLA_USE_BF16=1 -- lm.pt
