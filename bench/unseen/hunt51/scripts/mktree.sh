#!/bin/bash
# mktree.sh NAME MIRROR COMMIT PATH... : files of MIRROR at COMMIT into /tmp/hunt51/src/NAME (paths kept), git init+commit.
set -u
NAME=$1; M=/work/.mirror/$2/repo; C=$3; shift 3
D=/tmp/hunt51/src/$NAME; rm -rf "$D"; mkdir -p "$D"
for p in "$@"; do
  if git --git-dir=$M cat-file -e "$C:$p" 2>/dev/null; then
    if [ "$(git --git-dir=$M cat-file -t "$C:$p")" = tree ]; then
      git --git-dir=$M archive "$C" "$p" | tar -x -C "$D"
    else mkdir -p "$D/$(dirname "$p")"; git --git-dir=$M show "$C:$p" > "$D/$p"; fi
  else echo "absent at $C: $p" >&2; fi
done
(cd "$D" && git init -q && git add -A && git -c user.email=h@h -c user.name=h commit -qm legacy)
