#!/bin/bash
# added after vq4.sh: a right text that keeps the random stream, and verify gap V1's repro (amp, the codemod's own text)
cd "$(dirname "$0")"
C() { rm -rf /tmp/hunt42s/* /tmp/hunt42vr/* /tmp/hunt42v/*; }
C; ./vrepro.sh part_called_after_train amp
C; ./against.sh vq.right_alt2 stochastic vq_codebook train_vq.py vq.right_alt2.stochastic.py
C
