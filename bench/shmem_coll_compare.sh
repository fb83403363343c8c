#!/usr/bin/env bash
# Tessera vs Open MPI's OSHMEM on the OpenSHMEM 1.4 active-set collectives (shmem_broadcast64, shmem_fcollect64,
# shmem_alltoall64, shmem_float_sum_to_all, each call followed by shmem_barrier_all), from one source built by
# both: bench/shmem_coll.c with tessera-cc and with oshcc.
#   [ROUNDS=3] [QUICK=1] bash bench/shmem_coll_compare.sh [build-dir] [max-size]
# At 2 and 4 PEs (4: more PEs than CPUs on a 2-core machine), ROUNDS rounds, each running Tessera (its
# defaults) and OSHMEM under --bind-to core and --bind-to none back to back; which library runs first
# alternates with the round, and so does the order of OSHMEM's two bindings. A run's figure for a row is the
# median of its repetitions (bench/shmem_coll.c); the table keeps each library's best of the rounds, and for
# OSHMEM the better binding, named in the table: the comparison is against OSHMEM as well set up as a user
# would set it up for this machine. Columns: time per call+barrier in us, Tessera / OSHMEM time, and the
# bandwidth of each (bytes landing in each PE's dest per call / time) with Tessera / OSHMEM bandwidth.
# Each run checks every routine's result once per size; wrong data fails the run, and the script.
# QUICK=1: sizes up to 1 MiB, a fiftieth of the iterations and one round, a check of function in seconds
# on an idle machine.
# Needs: openmpi-bin libopenmpi-dev (oshcc, oshrun) (scripts/install-deps.sh bench). Exit status 1 when a run
# failed or timed out (the table still prints, without its rows), else 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then max=${2:-1M}; scale=0.02; ROUNDS=${ROUNDS:-1}; limit=60
else max=${2:-64M}; scale=1; ROUNDS=${ROUNDS:-3}; limit=300; fi
# A run that outlives $limit seconds is recorded as failed and the script goes on: a library whose PEs spin
# on a CPU they share (4 PEs bound to 2 cores) can stall for minutes, a finding for the table, not a reason
# to hang.
bash "$here/../scripts/install-deps.sh" bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=/usr/bin/python3
ncpu=$(nproc)
res="$tmp/results.jsonl"
: > "$res"
oshcc -O2 -o "$tmp/coll_oshmem" "$here/shmem_coll.c"
"$build/bin/tessera-cc" -O2 -o "$tmp/coll_tessera" "$here/shmem_coll.c"

# The symmetric heap each PE needs (shmem_coll.c: source and dest of PEs x max, pWrk of max / 8), in MiB,
# with room for the pSyncs and the libraries' own symmetric objects.
max_bytes=$($py -c 'import sys; s = sys.argv[1]; u = {"K": 10, "M": 20}.get(s[-1:].upper(), 0)
print(int(s[:-1] if u else s) << u)' "$max")
heap_mib() { echo $(( ((2 * $1 + 1) * max_bytes >> 20) + 64 )); }
# OSHMEM's binding: with more processes than CPUs, binding to a core needs Open MPI's explicit permission to
# put two on one core (that is what --bind-to core means there).
bind_opt() { if [ "$1" = core ] && [ "$2" -gt "$ncpu" ]; then echo core:overload-allowed; else echo "$1"; fi; }
binds() { if [ $((round % 2)) -eq 1 ]; then echo "core none"; else echo "none core"; fi; }

failed=0
# go LIB BIND NP CMD...: one run into $tmp/last.out; its JSON lines land in results.jsonl tagged with the
# library, binding and round, or its last lines of stderr are printed and the script will exit 1. Parsed after
# the run: a Python starting up while the PEs run would take CPU from them.
go() {
  local lib=$1 bind=$2 np=$3 rc=0
  shift 3
  # Both names of the heap size: Open MPI 4.1's OSHMEM reads SMA_SYMMETRIC_SIZE and ignores SHMEM_SYMMETRIC_SIZE
  # (its heap stays at 256 MiB), Tessera reads either.
  env SHMEM_SYMMETRIC_SIZE="$(heap_mib "$np")M" SMA_SYMMETRIC_SIZE="$(heap_mib "$np")M" "$@" \
    > "$tmp/last.out" 2> "$tmp/last.err" || rc=$?
  if [ $rc -ne 0 ] || ! grep -q '^{' "$tmp/last.out"; then
    local why="exit status $rc"
    [ $rc -eq 124 ] && why="timeout after ${limit}s"
    echo "   $lib np $np (bind $bind) failed: $why" >&2
    tail -n 5 "$tmp/last.err" | sed 's/^/     | /' >&2
    failed=1
    return
  fi
  $py -c 'import json, sys
for line in open(sys.argv[4]):
    if line.startswith("{"):
        print(json.dumps(dict(json.loads(line), lib=sys.argv[1], bind=sys.argv[2], round=int(sys.argv[3]))))' \
    "$lib" "$bind" "$round" "$tmp/last.out" >> "$res"
}
tessera() {
  go tessera default "$1" "$build/bin/tessera-run" -n "$1" --timeout "$limit" "$tmp/coll_tessera" "$max" "$scale" --json
}
oshmem() {
  local b
  for b in $(binds); do
    go oshmem "$b" "$1" timeout -k 10 "$limit" oshrun --oversubscribe --mca osc ^rdma \
      --bind-to "$(bind_opt "$b" "$1")" -np "$1" "$tmp/coll_oshmem" "$max" "$scale" --json
  done
}

echo "== shmem_coll: Tessera vs Open MPI OSHMEM, sizes up to $max, iteration scale $scale, $ROUNDS round(s);" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for np in 2 4; do
  for ((round = 1; round <= ROUNDS; ++round)); do
    echo "   [${SECONDS}s] $np PEs, round $round" >&2
    if [ $((round % 2)) -eq 1 ]; then tessera "$np"; oshmem "$np"; else oshmem "$np"; tessera "$np"; fi
  done
done
echo "   [${SECONDS}s] done; load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

$py - "$res" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
order = ["broadcast64", "fcollect64", "alltoall64", "float_sum_to_all"]
keys = sorted({(r["routine"], r["npes"], r["bytes"]) for r in recs}, key=lambda k: (order.index(k[0]), k[1], k[2]))

def best(key, lib):
    rs = [r for r in recs if (r["routine"], r["npes"], r["bytes"]) == key and r["lib"] == lib]
    return min(rs, key=lambda r: r["time_us"]) if rs else None

def size_name(b):
    for unit, sh in (("M", 20), ("K", 10)):
        if b >= 1 << sh and b % (1 << sh) == 0: return f"{b >> sh}{unit}"
    return f"{b}B"

print("time: us per call + shmem_barrier_all, best of the rounds of each run's median; OSHMEM: the better binding")
print("GB/s: bytes landing in each PE's dest per call / time (PEs x bytes for fcollect and alltoall)")
print(f"{'routine':<17} {'PEs':>3} {'bytes':>6} {'Tessera us':>12} {'OSHMEM us':>12} {'bind':>5} {'T/O time':>9}"
      f" {'Tessera GB/s':>13} {'OSHMEM GB/s':>12} {'T/O bw':>7}")
def us(r): return f"{r['time_us']:12.3f}" if r else f"{'-':>12}"
def bw(r, w): return f"{r['GBps']:{w}.4g}" if r else f"{'-':>{w}}"

wins = {"core": 0, "none": 0}
for key in keys:
    t, o = best(key, "tessera"), best(key, "oshmem")
    if o: wins[o["bind"]] += 1
    rt = f"{t['time_us'] / o['time_us']:8.2f}x" if t and o else f"{'-':>9}"
    rb = f"{t['GBps'] / o['GBps']:6.2f}x" if t and o and o["GBps"] else f"{'-':>7}"
    print(f"{key[0]:<17} {key[1]:>3} {size_name(key[2]):>6} {us(t)} {us(o)} {o['bind'] if o else '-':>5} {rt}"
          f" {bw(t, 13)} {bw(o, 12)} {rb}")
print(f"OSHMEM binding that won: core in {wins['core']} rows, none in {wins['none']}")
PY
exit $failed
