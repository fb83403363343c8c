#!/usr/bin/env bash
# Registered buffers (tesseraCommRegister) against the symmetric heap and against unregistered user buffers:
# bench/register_cost.c, 64 MiB and 1 MiB allreduce at 2 and 4 PEs, the three forms alternated in one run.
#   bash bench/register_compare.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/bin/tessera-cc" -O2 "$root/bench/register_cost.c" -o "$out/register_cost"
for n in 2 4; do
  for bytes in 67108864 1048576; do
    iters=$((bytes > 1048576 ? 5 : 50))
    "$build/bin/tessera-run" -n "$n" --env SHMEM_SYMMETRIC_SIZE=512M "$out/register_cost" "$bytes" "$iters" 7
  done
done
