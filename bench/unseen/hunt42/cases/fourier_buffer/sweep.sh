#!/bin/bash
# Fourier-feature scale sweep on the accelerator, in bf16.
export XLA_USE_BF16=1
for s in 2 4 8; do
  python fit_image.py --scale "$s" --out "render_s$s.npy" "$@"
done
