#!/usr/bin/env bash
# Two builds of Tessera side by side (before and after a change), alternated in one sitting, on the rows
# the RMA and collective targets are set on (bench/rma_vs_oshmem.sh, bench/coll_compare.sh):
#   RMA at 2 PEs: put, get, fetch-add and ping-pong latency at 8 and 64 B, put bandwidth from 32 KiB (sizes
#   8 B x 8^k up to 64 MiB);
#   allreduce at 8 B, 512 KiB and 64 MiB, reduce_scatter / allgather / alltoall / broadcast at 64 MiB, and the
#   barrier, at 2 and 4 PEs (4: more PEs than CPUs on a 2-core machine).
#   [ROUNDS=3] bash bench/ab_compare.sh BEFORE-BUILD-DIR AFTER-BUILD-DIR
# Each round runs every row with both builds back to back, the build that goes first alternating with the
# round; the table keeps each build's best round per row and prints after/before (time: below 1 is faster,
# bandwidth: above 1 is faster). Each build's own tessera-run and tessera-perf are used.
set -euo pipefail
before=$(cd "${1:?usage: $0 BEFORE-BUILD AFTER-BUILD}" && pwd)
after=$(cd "${2:?usage: $0 BEFORE-BUILD AFTER-BUILD}" && pwd)
ROUNDS=${ROUNDS:-3}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
res="$tmp/rows.txt"
: > "$res"

# row NAME NP BENCH ARGS...: one run with each build, in the order of the round; appends "build name value".
# The value is the time in us (collectives: the size's time column; RMA: latency or bandwidth per --json).
run() {
  local b=$1 name=$2 np=$3
  shift 3
  SHMEM_SYMMETRIC_SIZE=512M "$b/bin/tessera-run" -n "$np" "$b/bin/tessera-perf" "$@" --json > "$tmp/out.json" 2> /dev/null ||
    { echo "$name: failed with $b" >&2; return 0; }
  echo "$b $name $(tr '\n' ' ' < "$tmp/out.json")" >> "$res"
}
row() {
  local name=$1
  shift
  if [ $((round % 2)) -eq 1 ]; then run "$before" "$name" "$@"; run "$after" "$name" "$@"
  else run "$after" "$name" "$@"; run "$before" "$name" "$@"; fi
}

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round" >&2
  row "rma" 2 rma -b 8 -e 64M -f 8
  for np in 2 4; do
    for b in 8 512K 64M; do row "allreduce-$np" "$np" allreduce -b "$b" -e "$b"; done
    for c in reduce_scatter allgather alltoall broadcast; do row "$c-$np" "$np" "$c" -b 64M -e 64M; done
    row "barrier-$np" "$np" barrier
  done
done

$py - "$res" "$before" "$after" <<'PY'
import json, sys, re
rows, before, after = sys.argv[1], sys.argv[2], sys.argv[3]
best = {}  # (build, row key) -> (value, higher_is_better)
def keep(b, key, v, hib):
    k = (b, key)
    if k not in best or (v > best[k][0] if hib else v < best[k][0]):
        best[k] = (v, hib)
for line in open(rows):
    b, name, payload = line.split(' ', 2)
    docs = []
    dec = json.JSONDecoder()
    s = payload.strip()
    i = 0
    while i < len(s):
        while i < len(s) and s[i] in ' \n': i += 1
        if i >= len(s): break
        obj, j = dec.raw_decode(s, i)
        docs.append(obj)
        i = j
    for d in docs:
        if name == 'rma':
            for r in d.get('rma', []):
                size = r['size']
                for f in ('put_lat_us', 'get_lat_us', 'pingpong_us'):
                    if f in r and size in (8, 64): keep(b, f"rma {f[:-3]} {size}", r[f], False)
                if 'put_bw_GBps' in r and size >= 32768: keep(b, f"rma put_bw {size} GB/s", r['put_bw_GBps'], True)
            if 'fadd_lat_us' in d: keep(b, "rma fadd_lat 8", d['fadd_lat_us'], False)
        else:
            for r in d.get('results', []):
                keep(b, f"{name} {r['size']}", r['time_us'], False)
keys = sorted({k for (_, k) in best}, key=lambda k: (k.split()[0], k))
print(f"{'row':40s} {'before':>12s} {'after':>12s} {'after/before':>13s}")
for k in keys:
    if (before, k) not in best or (after, k) not in best: continue
    vb, hib = best[(before, k)]
    va, _ = best[(after, k)]
    ratio = va / vb if vb else float('nan')
    unit = 'GB/s' if hib else 'us'
    print(f"{k:40s} {vb:12.4g} {va:12.4g} {ratio:12.2f}x  ({unit}; {'higher' if hib else 'lower'} is better)")
PY
