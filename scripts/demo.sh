#!/usr/bin/env bash
# make demo: Tessera's main job on local PEs. ring_pass (put-with-signal around a ring, verified), the
# one-sided benchmark, then the collective sweep, a data-parallel training step with gradient bucketing and
# the operator benchmark, a short PyTorch DDP training run on the tessera backend, a MoE dispatch/combine and
# a GNN aggregation and a fused MatMul+AllReduce.
set -euo pipefail
build=${1:-build}
n=${2:-4}
run="$build/bin/tessera-run"
perf="$build/bin/tessera-perf"
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-1G}

echo "== ring_pass on $n PEs =="
"$run" -n "$n" "$build/bin/ring_pass" 2000 4096

echo
echo "== tessera-perf rma on $n PEs (PE 0 -> PE 1; $n PEs share $(nproc) cores) =="
"$run" -n "$n" "$perf" rma -b 8 -e 64M -f 2

if "$perf" --help | grep -q '^  allreduce '; then
  echo
  echo "== tessera-perf allreduce on $n PEs (float32 sum; out-of-place and in-place, checked) =="
  "$run" -n "$n" "$perf" allreduce -b 8 -e 64M -f 4 -c 1
fi
echo
echo "== data_parallel_step on $n PEs (backward kernels on a compute stream, gradient buckets on a comm stream, joined by events) =="
"$run" -n "$n" "$build/bin/data_parallel_step"

if "$perf" --help | grep -q '^  ops '; then
  echo
  echo "== tessera-perf ops (reduction operators on one PE, 2 blocks) =="
  "$perf" ops -m 64 -i 3
fi

# The interpreter the backend was built for (make's build/venv, or the user's TORCH_PYTHON).
torch_py=$(sed -n 's/^TESSERA_TORCH_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ -d "$build/python/tessera_torch" ] && [ -n "$torch_py" ]; then
  echo
  echo "== PyTorch DDP training on $n ranks with the tessera backend (examples/torch/ddp_train.py) =="
  "$run" -n "$n" "$torch_py" examples/torch/ddp_train.py 30 2>&1 | grep -v -i "warn"
fi

echo
echo "== moe_dispatch on $n PEs (tokens to their top-2 experts and back, weighted; every token checked) =="
"$run" -n "$n" "$build/bin/moe_dispatch" 512 2048

echo
echo "== gnn_layer on $n PEs (GraphSAGE mean over an R-MAT graph, neighbours read in place) =="
"$run" -n "$n" "$build/bin/gnn_layer" 16 1048576 64

echo
echo "== fused_matmul on $n PEs (a row-parallel layer: MatMul with its AllReduce pipelined in, checked) =="
OPENBLAS_NUM_THREADS=1 "$run" -n "$n" "$build/bin/fused_matmul" 256 1024
