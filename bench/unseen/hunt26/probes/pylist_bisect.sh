#!/bin/bash
# bisect which shape makes `scores = torch.tensor(keep_scores, device=device)` go uncast (stochastic)
for f in "$@"; do
  n=$(cd $(dirname $f) && PYTHONPATH=/work/wt/hunt26 /work/main/.venv/bin/python -m bf16_migrate $(basename $f) --mode stochastic --diff 2>/dev/null | grep -c '^+.*floating_to_bf16(torch.tensor(keep_scores')
  echo "$(basename $f): keep_scores cast lines (floating_to_bf16 at the move): $n"
done
