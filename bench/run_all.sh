#!/usr/bin/env bash
# make bench: every side-by-side comparison with the peers, one after the other (the machine is shared and
# noisy: each script measures Tessera and its peer in the same run and prints ratios).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
status=0
echo "### RMA: Tessera vs Open MPI OSHMEM";            bash "$here/rma_vs_oshmem.sh" "$build" || status=1
echo; echo "### OpenSHMEM active-set collectives: Tessera vs Open MPI OSHMEM"; bash "$here/shmem_coll_compare.sh" "$build" || status=1
echo; echo "### Collectives: Tessera vs Open MPI and gloo"; bash "$here/coll_compare.sh" "$build" || status=1
echo; echo "### Gradient bucketing: Tessera vs PyTorch DDP (gloo)"; bash "$here/bucket_compare.sh" "$build" || status=1
echo; echo "### Shared CPUs: beside busy processes, vs OSHMEM, Open MPI and OpenMP"; bash "$here/shared_cpus.sh" "$build" || status=1
echo; echo "### Across hosts (namespace hosts): Tessera vs iperf3, OSHMEM (UCX), Open MPI and gloo"; bash "$here/hosts_compare.sh" "$build" || status=1
echo; echo "### PyTorch: the tessera backend vs gloo"; bash "$here/torch_backend.sh" "$build" || status=1
echo; echo "### MoE dispatch + combine: Tessera vs MPI_Alltoallv and gloo"; bash "$here/moe/moe_compare.sh" "$build" || status=1
echo; echo "### GNN aggregation: Tessera vs halo exchange (MPI_Alltoallv, gloo)"; bash "$here/gnn/gnn_compare.sh" "$build" || status=1
echo; echo "### Fused MatMul+AllReduce: Tessera vs GEMM then allreduce (Tessera, MPI, torch+gloo)"; bash "$here/fused/fused_compare.sh" "$build" || status=1
echo; echo "### Operators: Tessera vs PyTorch";           "$(bash "$here/../scripts/torch-env.sh" "$build")" "$here/ops_vs_torch.py" --perf "$build/bin/tessera-perf" || status=1
exit $status
