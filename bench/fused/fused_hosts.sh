#!/usr/bin/env bash
# Fused MatMul+AllReduce across two namespace hosts (tests/hosts/netns.sh) on an emulated link (tc tbf):
# Tessera's fused op against GEMM-then-allreduce in the same program (OpenBLAS + Tessera's allreduce), and
# OpenBLAS + MPI_Allreduce (Open MPI, ob1/tcp) on the same link, alternated round by round, PPN ranks per
# host, over tensor-parallel shapes (tokens x hidden; each rank holds hidden/ranks of the inner dimension).
# Prints, per shape, the medians, the reduction's share of the unfused time and the fused op's speedup.
#   [RATE=1gbit] [PPN=1] [ROUNDS=3] [SHAPES="512:2048 512:4096 2048:4096"] bash bench/fused/fused_hosts.sh [build-dir]
# One BLAS thread per rank (OPENBLAS_NUM_THREADS=1). Needs root and Open MPI (scripts/install-deps.sh bench).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
# shellcheck source=../../tests/hosts/netns.sh disable=SC1091
. "$root/tests/hosts/netns.sh"
hosts_require_root
out=$(mktemp -d)
trap 'hosts_down; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
RATE=${RATE:-1gbit}
PPN=${PPN:-1}
ROUNDS=${ROUNDS:-3}
SHAPES=${SHAPES:-"512:2048 512:4096 2048:4096"}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export TESSERA_RSH=$root/tests/hosts/rsh
mpicc -O2 $(pkg-config --cflags openblas) -o "$out/fused_mpi" "$here/fused_mpi.c" $(pkg-config --libs openblas)
hosts_up 2
[ "$RATE" = off ] || hosts_link rate="$RATE"
np=$((2 * PPN))
res=$out/results.jsonl
for ((round = 1; round <= ROUNDS; round++)); do
  for shape in $SHAPES; do
    m=${shape%%:*} h=${shape#*:}
    timeout 1200 "$build/bin/tessera-run" --hosts "h1:$PPN,h2:$PPN" --timeout 1100 \
      --env OPENBLAS_NUM_THREADS=1 --env SHMEM_SYMMETRIC_SIZE=2G "$build/bin/bench_fused_tessera" "$m" "$h" 5 |
      tee -a "$res"
    host_exec h1 timeout 1200 mpirun --host "h1:$PPN,h2:$PPN" -np "$np" --map-by ppr:"$PPN":node --bind-to none \
      --mca plm_rsh_agent "$root/tests/hosts/rsh" --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
      --mca pml ob1 --mca btl tcp,vader,self -x OPENBLAS_NUM_THREADS env -u NETNS_HOSTS_DIR "$out/fused_mpi" "$m" "$h" 5 |
      tee -a "$res"
  done
done
python3 - "$res" "$RATE" "$PPN" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"link {sys.argv[2]}, 2 hosts x {sys.argv[3]} rank(s); medians over rounds (ms)")
print(f"{'m x h':>12s} {'fused':>8s} {'unfused':>8s} {'gemm':>8s} {'reduce':>8s} {'share':>6s} {'speedup':>8s} {'mpi':>8s} {'mpi/fused':>9s}")
for m, h in sorted({(r["m"], r["h"]) for r in rows}):
    med = lambda impl, k: statistics.median(r[k] for r in rows if r["m"] == m and r["h"] == h and r["impl"] == impl) / 1e3
    f, u, g, a, mpi = med("tessera", "fused_us"), med("tessera", "us"), med("tessera", "gemm_us"), med("tessera", "allreduce_us"), med("mpi", "us")
    print(f"{m:5d} x {h:5d} {f:8.1f} {u:8.1f} {g:8.1f} {a:8.1f} {a / u:6.2f} {u / f:7.2f}x {mpi:8.1f} {mpi / f:8.2f}x")
PY
