#!/bin/bash
# second device queue: the hand migration BFM058 asks for (pinn_downcast), and a probe of host-made state
cd "$(dirname "$0")"
./against.sh pinn_downcast.f32default stochastic pinn_downcast pinn.py pinn_downcast.f32default
./vqueue.sh host_state_noload ../probes/host_state_noload train_dqn.py stochastic
./against.sh pinn_downcast.f64host stochastic pinn_downcast pinn.py pinn_downcast.f64host
