#!/bin/bash
# gap 2 in stochastic on the device (does the f32 module fed bf16 crash there too?)
cd "$(dirname "$0")"
./vrepro.sh explicit_f32_module stochastic
./against.sh pinn_downcast.f64host_f32rand stochastic pinn_downcast pinn.py pinn_downcast.f64host_f32rand
