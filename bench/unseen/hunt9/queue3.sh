#!/bin/bash
# repro runs of hunt9 (legacy and migrated, each under the XLA lock)
cd /work/wt/hunt9/bench/unseen/hunt9
repros/run_repro.sh r_generator_dtype stochastic
repros/run_repro.sh r_tensor_of_constant stochastic
repros/run_repro.sh r_replay_reward_target stochastic
repros/run_repro.sh r_target_nets_leaf_param gpu-compatible
repros/run_repro.sh r_plain_attr_to_device stochastic
repros/run_repro.sh r_rfft_bf16 stochastic
# added: verify's shared working directory (G14)
rm -rf repros/verify_shared_cwd/ckpt
./vrun.sh repro.verify_shared_cwd stochastic bench/unseen/hunt9/repros/verify_shared_cwd/resume.py
ls -la --time-style=+%H:%M:%S repros/verify_shared_cwd/ckpt > verify_logs/repro.verify_shared_cwd.ckpt-listing.txt 2>&1
# added: default_f64_downcast with the XLA device named in main (G5)
./vrun.sh default_f64_downcast.device_variant stochastic bench/unseen/hunt9/default_f64_downcast/device_variant/fit_oscillator.py
