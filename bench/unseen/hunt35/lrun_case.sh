#!/bin/bash
# usage: ./lrun_case.sh CASE SCRIPT [ENV=V...] -- [args]: run SCRIPT of cases/CASE in a scratch copy under the XLA lock
# with the given settings (legacy: XLA_USE_BF16=1) -> verify_logs/legacy.CASE.txt (or LOGNAME)
H=$(cd "$(dirname "$0")" && pwd); C=$1; S=$2; shift 2; ENVS=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do ENVS+=("$1"); shift; done; shift
D=$H/scratch/run.$C; rm -rf "$D"; mkdir -p "$D"; cp -a "$H/cases/$C"/. "$D"
cd "$D"; ( time flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU "${ENVS[@]}" /work/main/.venv/bin/python "$S" "$@" ) > "$H/verify_logs/${LOGNAME_:-legacy.$C}.txt" 2>&1
echo "rc $?" >> "$H/verify_logs/${LOGNAME_:-legacy.$C}.txt"
