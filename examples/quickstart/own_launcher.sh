#!/bin/sh
# own_launcher.sh N PROG: what your own launcher does, in a few lines: start N processes of PROG with
# TESSERA_RANK and TESSERA_SIZE, give them a fresh file through which rank 0 hands out its id, and exit
# with the first failing status (0 when every process exits 0). No tessera-run involved.
set -u
n=${1:?usage: own_launcher.sh N PROG}; prog=${2:?usage: own_launcher.sh N PROG}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
pids=
r=0
while [ "$r" -lt "$n" ]; do
  TESSERA_RANK=$r TESSERA_SIZE=$n "$prog" "$dir/id" &
  pids="$pids $!"
  r=$((r + 1))
done
status=0
for p in $pids; do wait "$p" || { rc=$?; [ "$status" -eq 0 ] && status=$rc; }; done
exit "$status"
