#!/bin/bash
# Extra device run: pytree_dicts in amp (the training forward reached through functools.partial left outside autocast).
cd "$(dirname "$0")"
./vqueue.sh pytree_dicts pytree_dicts train_multi.py amp --legacy-env XLA_DOWNCAST_BF16=1
