#!/bin/bash
# Hand-made WRONG migrations verified against the legacy case (against.sh, --steps 6, under the lock).
cd "$(dirname "$0")"
./against.sh sf_wloss stochastic step_factory train.py step_factory.wloss.stochastic.py
./against.sh cw_innercast stochastic ctx_wrapper train_cls.py ctx_wrapper.innercast.stochastic.py
./against.sh cw_evalf32 amp ctx_wrapper train_cls.py ctx_wrapper.evalf32.amp.py
./against.sh sf_noswitch stochastic step_factory train.py step_factory.noswitch.py
