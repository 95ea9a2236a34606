#!/bin/bash
# A hand-made wrong stochastic text of namedtuple_closures: the NamedTuple's to() left as it was (targets f32 on the
# device), so only the @torch.no_grad() eval_step closure, after the recorded steps, computes in f32.
cd "$(dirname "$0")"
./against.sh nt_evalf32y stochastic namedtuple_closures train_seq.py namedtuple_closures.evalf32y.stochastic.py
