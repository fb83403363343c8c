#!/usr/bin/env bash
# GNN neighbour aggregation (GraphSAGE mean over an R-MAT graph), side by side in one run: Tessera
# (tessera::gnn, rows of other PEs read in place, bench/gnn/gnn_tessera.cc) against a halo exchange with Open
# MPI's MPI_Alltoallv (bench/gnn/gnn_mpi.c) and with PyTorch's gloo all_to_all_single + index_add_
# (bench/gnn/gnn_gloo.py), at 2 and 4 ranks; same graph, partition and features; every program checks
# every owned node. First the three generators are compared (an edge-list checksum).
#   bash bench/gnn/gnn_compare.sh [build-dir] [out-dir]
# Peers at their best: MPI with mpirun's default binding and with --bind-to none (the report takes the faster
# per row and says which); gloo under tessera-run's default binding. Writes <out-dir>/gnn.jsonl, prints
# the table with the target (at least 2x both peers) and plots gnn.png.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../record.sh"
bench_dirs gnn "$@"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-4G}
mpicc -O2 -o "$out/gnn_mpi" "$here/gnn_mpi.c" -lm
run="$build/bin/tessera-run"
torch_py=$(bash "$here/../../scripts/torch-env.sh" "$build")  # the PyTorch 2 the backend is built with (build/venv)
# The generators agree (scale 12, 50000 edges, seed 5).
sums=$( { GNN_EDGE_CHECKSUM=50000 "$run" -n 1 "$build/bin/bench_gnn_tessera" 12 50000 4 1 5 2>&1 >/dev/null
          GNN_EDGE_CHECKSUM=50000 mpirun -np 1 "$out/gnn_mpi" 12 50000 4 1 5 2>&1 >/dev/null
          GNN_EDGE_CHECKSUM=50000 "$run" -n 1 "$torch_py" "$here/gnn_gloo.py" 12 50000 4 1 5 2>&1 >/dev/null; } |
        grep '^edge_checksum' | sort -u | wc -l)
[ "$sums" = 1 ] || { echo "!! the three R-MAT generators disagree" >&2; exit 1; }
shapes=("18 1048576 64" "20 4194304 32" "22 16777216 16")  # scale edges dim
for np in 2 4; do
  for s in "${shapes[@]}"; do
    read -r scale edges dim <<< "$s"
    echo "== $np ranks, R-MAT scale $scale, $edges edges, $dim features" >&2
    record default "$run" -n "$np" "$build/bin/bench_gnn_tessera" "$scale" "$edges" "$dim" 10
    record bound mpirun --oversubscribe -np "$np" "$out/gnn_mpi" "$scale" "$edges" "$dim" 10
    record unbound mpirun --oversubscribe --bind-to none -np "$np" "$out/gnn_mpi" "$scale" "$edges" "$dim" 10
    record default "$run" -n "$np" "$torch_py" "$here/gnn_gloo.py" "$scale" "$edges" "$dim" 4
  done
done
/usr/bin/python3 "$here/gnn_report.py" "$res" "$out/gnn.png"
exit $status
