#!/usr/bin/env bash
# Compute streams against host joins: examples/data_parallel_step --time at 2 and 4 PEs, its four forms
# alternated step by step in one run (backward kernels on a compute stream joined to the bucket allreduces by
# events; the same kernels on the calling thread with each gradient marked ready when it returns; the backward
# pass alone; the allreduces alone), and the share of the communication hidden behind compute.
#   [SCALE=8] [STEPS=9] bash bench/stream_overlap.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
scale=${SCALE:-8} steps=${STEPS:-9}
for n in 2 4; do
  "$build/bin/tessera-run" -n "$n" "$build/bin/data_parallel_step" --time --scale "$scale" --steps "$steps"
done
