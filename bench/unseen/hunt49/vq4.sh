#!/bin/bash
# fourth batch: the one-file control of downcast_f64_buffer_sibling (downcast_bf16 keeps the f64 buffer f32)
cd "$(dirname "$0")"
./vrepro.sh downcast_numpy_f64_buffer stochastic
