#!/usr/bin/env bash
# MoE dispatch + combine, side by side in one run: Tessera (tessera::moe, bench/moe/moe_tessera.cc) against the
# same routing with Open MPI's MPI_Alltoallv (counts exchanged first, bench/moe/moe_mpi.c) and with PyTorch's
# gloo all_to_all_single (bench/moe/moe_gloo.py), at 2 and 4 ranks. Every program checks every combined token.
#   bash bench/moe/moe_compare.sh [build-dir] [out-dir]
# Shapes: throughput mode (training, prefill) at 512-4096 tokens per rank, hidden 2048-7168, top-2 and top-8,
# 8-64 experts; low-latency mode (decoding) at 1, 16 and 128 tokens, hidden 7168, top-8 of 64 experts, bf16.
# Peers at their best: MPI both with mpirun's default binding and with --bind-to none (the report takes the
# faster per row and says which); gloo under tessera-run's default binding (its times are two orders of
# magnitude above the others', where binding does not matter), throughput shapes only. Tessera under
# tessera-run, default binding.
# Writes <out-dir>/moe.jsonl, prints the table with the targets next to the ratios, and plots moe.png.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../record.sh"
bench_dirs moe "$@"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-4G}
mpicc -O2 -o "$out/moe_mpi" "$here/moe_mpi.c"
run="$build/bin/tessera-run"
torch_py=$(bash "$here/../../scripts/torch-env.sh" "$build")  # the PyTorch 2 the backend is built with (build/venv)
tput=("512 2048 2 8" "4096 2048 2 16" "1024 7168 8 64" "1024 4096 2 8")  # T H K E
tput_dtype=(bf16 bf16 bf16 f32)
ll=("1 7168 8 64" "16 7168 8 64" "128 7168 8 64")
for np in 2 4; do
  for i in "${!tput[@]}"; do
    read -r T H K E <<< "${tput[$i]}"
    dt=${tput_dtype[$i]}
    echo "== $np ranks, throughput T=$T H=$H top-$K of $E experts, $dt" >&2
    record default "$run" -n "$np" "$build/bin/bench_moe_tessera" "$T" "$H" "$K" "$E" "$dt" throughput 20
    record bound mpirun --oversubscribe -np "$np" "$out/moe_mpi" "$T" "$H" "$K" "$E" "$dt" 20
    record unbound mpirun --oversubscribe --bind-to none -np "$np" "$out/moe_mpi" "$T" "$H" "$K" "$E" "$dt" 20
    record default "$run" -n "$np" "$torch_py" "$here/moe_gloo.py" "$T" "$H" "$K" "$E" "$dt" 5
  done
  for cfg in "${ll[@]}"; do
    read -r T H K E <<< "$cfg"
    echo "== $np ranks, low latency T=$T H=$H top-$K of $E experts, bf16" >&2
    record default "$run" -n "$np" "$build/bin/bench_moe_tessera" "$T" "$H" "$K" "$E" bf16 low_latency 200
    record default "$run" -n "$np" "$build/bin/bench_moe_tessera" "$T" "$H" "$K" "$E" bf16 throughput 200
    record bound mpirun --oversubscribe -np "$np" "$out/moe_mpi" "$T" "$H" "$K" "$E" bf16 200
    record unbound mpirun --oversubscribe --bind-to none -np "$np" "$out/moe_mpi" "$T" "$H" "$K" "$E" bf16 200
  done
done
/usr/bin/python3 "$here/moe_report.py" "$res" "$out/moe.png"
exit $status
