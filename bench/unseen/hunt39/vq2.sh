#!/bin/bash
# the repros on the device, after vq1.sh (each under the lock inside vrepro.sh)
cd "$(dirname "$0")"
while pgrep -f "hunt39/vq1.sh" > /dev/null; do sleep 5; done
./vrepro.sh submodule_call_f32_input stochastic
./vrepro.sh numpy_f64_matmul amp
./vrepro.sh numpy_f64_normalize stochastic
./vrepro.sh device_state_dict_math stochastic
