#!/bin/bash
# Run runtool.sh on every part-2 tree, 6 at a time.
cd /work/wt/hunt51/bench/unseen/hunt51
awk '{print $1}' logs/trees.txt | xargs -P 6 -I{} scripts/runtool.sh {} /tmp/hunt51/src/{}
echo done
