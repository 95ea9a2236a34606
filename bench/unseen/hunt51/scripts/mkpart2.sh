#!/bin/bash
# Build every part-2 tree listed in logs/trees.txt under /tmp/hunt51/src/NAME (the listed file's directory at its
# commit; a directory over 130 files: its top-level files only; the repository root: the listed files only).
set -u
while read -r NAME REPO C D N PATHS; do
  M=/work/.mirror/$REPO/repo; T=/tmp/hunt51/src/$NAME; rm -rf "$T"; mkdir -p "$T"
  if [ "$D" = . ]; then
    for p in $PATHS; do git --git-dir=$M show "$C:$p" > "$T/$p"; done
  elif [ "$N" -gt 130 ]; then
    mkdir -p "$T/$D"
    git --git-dir=$M ls-tree --name-only "$C" "$D/" | while read -r p; do
      [ "$(git --git-dir=$M cat-file -t "$C:$p")" = blob ] && git --git-dir=$M show "$C:$p" > "$T/$p"; done
  else
    git --git-dir=$M archive "$C" "$D" | tar -x -C "$T"
  fi
  (cd "$T" && git init -q && git add -A && git -c user.email=h@h -c user.name=h commit -qm legacy)
done < logs/trees.txt
