#!/usr/bin/env bash
# Tessera vs Open MPI's OSHMEM, side by side in one run, on the same benchmark source (bench/rma/rma_bench.c).
#   [ROUNDS=3] bench/rma_vs_oshmem.sh [build-dir] [max-size]
# Prints both tables and the ratios against the RMA targets, ROUNDS times (default 1), each round with
# the hardware floor of the ping-pong (bench/rma/line_pingpong.c) measured just before it; then
# shmem_barrier_all at 2 and 4 PEs (4: more PEs than CPUs on a 2-core machine), alternating which library
# runs first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
max=${2:-64M}
bash "$here/../scripts/install-deps.sh" bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
oshcc -O2 -o "$tmp/rma_oshmem" "$here/rma/rma_bench.c" "$here/rma/rma_bench_main.c"
cc -O2 -o "$tmp/line_pingpong" "$here/rma/line_pingpong.c"
oshcc -O2 -o "$tmp/barrier_oshmem" "$here/rma/barrier_all.c"
"$build/bin/tessera-cc" -O2 -o "$tmp/barrier_tessera" "$here/rma/barrier_all.c"

for round in $(seq 1 "${ROUNDS:-1}"); do
echo "== round $round: hardware floor, then Open MPI OSHMEM (oshrun -np 2), then Tessera (tessera-run -n 2) =="
"$tmp/line_pingpong" --json > "$tmp/floor.json"
SHMEM_SYMMETRIC_SIZE=512M SMA_SYMMETRIC_SIZE=512M oshrun --oversubscribe --mca osc ^rdma -np 2 "$tmp/rma_oshmem" -e "$max" -f 2 --json \
  > "$tmp/oshmem.json" 2> "$tmp/oshmem.err" || { cat "$tmp/oshmem.err"; exit 1; }
SHMEM_SYMMETRIC_SIZE=512M "$build/bin/tessera-run" -n 2 "$build/bin/tessera-perf" rma -e "$max" -f 2 --json \
  > "$tmp/tessera.json"

python3 - "$tmp/tessera.json" "$tmp/oshmem.json" "$tmp/floor.json" <<'PY'
import json, sys
t, o, floor = (json.load(open(p)) for p in sys.argv[1:4])
rows_t = {r["size"]: r for r in t["rma"]}
rows_o = {r["size"]: r for r in o["rma"]}
cols = [("put_lat_us", "put+quiet us", False), ("pingpong_us", "ping-pong us", False),
        ("put_bw_GBps", "put bw GB/s", True), ("get_lat_us", "get us", False)]
print(f"{'size':>10} " + " ".join(f"{name:>28}" for _, name, _ in cols) + f" {'memcpy GB/s':>12}")
print(f"{'':>10} " + " ".join(f"{'tessera / oshmem (ratio)':>28}" for _ in cols))
for size in sorted(rows_t):
    if size not in rows_o: continue
    a, b = rows_t[size], rows_o[size]
    cells = []
    for key, _, higher in cols:
        r = a[key] / b[key] if b[key] else float("nan")
        cells.append(f"{a[key]:9.3f} / {b[key]:9.3f} ({r:5.2f}x)")
    print(f"{size:>10} " + " ".join(f"{c:>28}" for c in cells) + f" {a['memcpy_GBps']:12.2f}")
print(f"fetch-add us: tessera {t['fadd_lat_us']:.4f} / oshmem {o['fadd_lat_us']:.4f} "
      f"({t['fadd_lat_us'] / o['fadd_lat_us']:.2f}x)")

def target(name, ok, detail):
    print(f"  [{'met ' if ok else 'MISS'}] {name}: {detail}")
print("Targets (RMA):")
s8, m1, m64 = rows_t.get(8), rows_t.get(1 << 20), rows_t.get(64 << 20)
o8, om1, om64 = rows_o.get(8), rows_o.get(1 << 20), rows_o.get(64 << 20)
if s8 and o8:
    target("8 B put+quiet no slower than OSHMEM", s8["put_lat_us"] <= o8["put_lat_us"],
           f"{s8['put_lat_us']:.3f} vs {o8['put_lat_us']:.3f} us ({s8['put_lat_us']/o8['put_lat_us']:.2f}x)")
    f_us = floor["half_rtt_ns"] / 1000
    target("8 B ping-pong at most 0.5x OSHMEM", s8["pingpong_us"] <= 0.5 * o8["pingpong_us"],
           f"{s8['pingpong_us']:.3f} vs {o8['pingpong_us']:.3f} us ({s8['pingpong_us']/o8['pingpong_us']:.2f}x); "
           f"hardware floor {f_us:.3f} us (one cache line each way, CPUs {floor['cpus'][0]} and {floor['cpus'][1]}), "
           f"so at best {f_us / o8['pingpong_us']:.2f}x here")
for sz, a, b in ((1 << 20, m1, om1), (64 << 20, m64, om64)):
    if a and b:
        target(f"{sz >> 20} MiB put bandwidth at least 1.2x OSHMEM", a["put_bw_GBps"] >= 1.2 * b["put_bw_GBps"],
               f"{a['put_bw_GBps']:.2f} vs {b['put_bw_GBps']:.2f} GB/s ({a['put_bw_GBps']/b['put_bw_GBps']:.2f}x)")
if m64:
    target("64 MiB put bandwidth at least 0.9x memcpy", m64["put_bw_GBps"] >= 0.9 * m64["memcpy_GBps"],
           f"{m64['put_bw_GBps']:.2f} vs memcpy {m64['memcpy_GBps']:.2f} GB/s ({m64['put_bw_GBps']/m64['memcpy_GBps']:.2f}x)")
PY
done

echo "== shmem_barrier_all: Tessera / Open MPI OSHMEM (medians of 11 batches of 20000; ${ROUNDS:-1} rounds) =="
bar_tessera() { "$build/bin/tessera-run" -n "$1" "$tmp/barrier_tessera" 11 20000 2> "$tmp/bar.err" | grep '^{' \
                  || { echo "tessera barrier_all failed:" >&2; cat "$tmp/bar.err" >&2; exit 1; }; }
bar_oshmem() { SHMEM_SYMMETRIC_SIZE=64M SMA_SYMMETRIC_SIZE=64M oshrun --oversubscribe --mca osc ^rdma -np "$1" "$tmp/barrier_oshmem" 11 20000 \
                 2> "$tmp/bar.err" | grep '^{' || { echo "oshmem barrier_all failed:" >&2; cat "$tmp/bar.err" >&2; exit 1; }; }
for np in 2 4; do
  for round in $(seq 1 "${ROUNDS:-1}"); do
    # Alternating which library runs first, round by round.
    if [ $((round % 2)) -eq 1 ]; then t=$(bar_tessera "$np"); o=$(bar_oshmem "$np");
    else o=$(bar_oshmem "$np"); t=$(bar_tessera "$np"); fi
    python3 - "$t" "$o" "$round" <<'PY'
import json, sys
t, o = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"  {t['npes']} PEs, round {sys.argv[3]}: tessera {t['median_us']:.3f} us (best {t['best_us']:.3f}), "
      f"oshmem {o['median_us']:.3f} (best {o['best_us']:.3f}): {t['median_us'] / o['median_us']:.2f}x")
PY
  done
done
