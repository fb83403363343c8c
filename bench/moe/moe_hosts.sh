#!/usr/bin/env bash
# MoE dispatch + combine across two namespace hosts (tests/hosts/netns.sh) on an emulated link (tc tbf):
# Tessera (tessera::moe, bench/moe/moe_tessera.cc) against the same routing with Open MPI's MPI_Alltoallv
# (counts exchanged first, bench/moe/moe_mpi.c; ob1 with btl tcp,vader,self, unbound) on the same link,
# alternated shape by shape in each round, PPN ranks per host. Every program checks every combined token.
# Prints, per shape, the medians over the rounds and Tessera's speed against MPI's (MPI time / Tessera time).
#   [RATE=1gbit] [PPN=1] [ROUNDS=3] [SHAPES="T:H:K:E:dtype:mode:iters[:gemm] ..."] bash bench/moe/moe_hosts.sh [build-dir]
# Shapes by default: throughput mode (training, prefill) at 512-4096 tokens per rank and low-latency mode
# (decoding) at 1 and 128 tokens, hidden 7168, top-8 of 64 experts; those times are dispatch + combine.
# A shape ending in :gemm gives each expert a layer's compute (its rows times an H x H matrix, OpenBLAS, one
# thread) and times the whole step: MPI, Tessera, and Tessera sending each expert's rows home as soon as it
# is done (Dispatcher::combine_expert, "early"); the report adds the experts' time and what is left of the
# step beyond it (the communication not hidden). Needs root, Open MPI and OpenBLAS (scripts/install-deps.sh bench).
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
SHAPES=${SHAPES:-"512:2048:2:8:bf16:throughput:10 1024:4096:2:8:f32:throughput:4 4096:2048:2:16:bf16:throughput:4 1:7168:8:64:bf16:low_latency:50 128:7168:8:64:bf16:low_latency:10"}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export TESSERA_RSH=$root/tests/hosts/rsh
# shellcheck disable=SC2046  # pkg-config's words are separate flags
mpicc -O2 -DMOE_GEMM $(pkg-config --cflags openblas) -o "$out/moe_mpi" "$here/moe_mpi.c" $(pkg-config --libs openblas)
hosts_up 2
[ "$RATE" = off ] || hosts_link rate="$RATE"
np=$((2 * PPN))
res=$out/results.jsonl
for ((round = 1; round <= ROUNDS; round++)); do
  for shape in $SHAPES; do
    IFS=: read -r T H K E dt mode iters work <<< "$shape"
    works=("") mpi_work=()
    [ "${work:-}" = gemm ] && works=(gemm gemm-early) mpi_work=(gemm)
    for w in "${works[@]}"; do
      timeout 1200 "$build/bin/tessera-run" --hosts "h1:$PPN,h2:$PPN" --timeout 1100 --env SHMEM_SYMMETRIC_SIZE=4G \
        --env OPENBLAS_NUM_THREADS=1 "$build/bin/bench_moe_tessera" "$T" "$H" "$K" "$E" "$dt" "$mode" "$iters" $w |  # SC2086: no word when empty
        tee -a "$res"
    done
    host_exec h1 timeout 1200 mpirun --host "h1:$PPN,h2:$PPN" -np "$np" --map-by ppr:"$PPN":node --bind-to none \
      --mca plm_rsh_agent "$root/tests/hosts/rsh" --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
      --mca pml ob1 --mca btl tcp,vader,self -x OPENBLAS_NUM_THREADS env -u NETNS_HOSTS_DIR "$out/moe_mpi" "$T" "$H" \
      "$K" "$E" "$dt" "$iters" "${mpi_work[@]}" |
      sed "s/^{\"impl\":\"mpi\"/{\"impl\":\"mpi\",\"mode\":\"$mode\"/" | tee -a "$res"
  done
done
python3 - "$res" "$RATE" "$PPN" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for r in rows:
    r.setdefault("work", "scale")
print(f"link {sys.argv[2]}, 2 hosts x {sys.argv[3]} rank(s); medians over rounds")
shape = lambda r: (r["mode"], r["tokens"], r["hidden"], r["top_k"], r["experts"], r["dtype"])
name = lambda k: f"{k[0]:>12s} {k[1]:6d} {k[2]:6d} {k[3]:>3d}/{k[4]:<4d} {k[5]:>5s}"
def med(impl, k, work, field="us"):
    v = [r[field] for r in rows if r["impl"] == impl and r["work"] == work and shape(r) == k]
    return statistics.median(v) if v else None
plain = sorted({shape(r) for r in rows if r["work"] == "scale"})
if plain:
    print("dispatch + combine:")
    print(f"{'mode':>12s} {'tokens':>6s} {'hidden':>6s} {'top-k/E':>8s} {'type':>5s} {'Tessera':>10s} {'MPI':>10s} {'MPI/Tessera':>11s}")
    for k in plain:
        t, m = med("tessera", k, "scale"), med("mpi", k, "scale")
        print(f"{name(k)} {t / 1e3:8.2f}ms {m / 1e3:8.2f}ms {m / t:10.2f}x")
layer = sorted({shape(r) for r in rows if r["work"] != "scale"})
if layer:
    print("the whole step with a GEMM per expert (ms): step, experts' time, step beyond the experts")
    print(f"{'':>43s} {'MPI':>22s} {'Tessera':>22s} {'Tessera, early':>22s} {'MPI/early':>9s} {'beyond: MPI/early':>17s}")
    for k in layer:
        cells, beyond = [], []
        for impl, work in (("mpi", "gemm"), ("tessera", "gemm"), ("tessera", "gemm-early")):
            s, c = med(impl, k, work), med(impl, k, work, "compute_us")
            cells.append(f"{s / 1e3:7.1f} {c / 1e3:7.1f} {(s - c) / 1e3:6.1f}")
            beyond.append(s - c)
        print(f"{name(k)} {cells[0]:>22s} {cells[1]:>22s} {cells[2]:>22s} "
              f"{med('mpi', k, 'gemm') / med('tessera', k, 'gemm-early'):8.2f}x {beyond[0] / beyond[2]:16.2f}x")
PY
