#!/usr/bin/env bash
# Tessera side by side with its peers on CPUs shared with busy outside processes: for each load L of LOADS,
# L processes spinning in a shell loop run all along the rows, as a neighbour's job does on a shared machine.
#   [ROUNDS=1] [LOADS="0 1 2"] [QUICK=1] bash bench/shared_cpus.sh [build-dir] [out-dir]
# Rows (2 PEs unless said), each measured for Tessera and its peer back to back, the first alternating with
# the round:
#   ping-pong   half round trip of bench/rma/rma_bench.c, 4K..16M: tessera-perf rma / the same source built
#               with oshcc under Open MPI's OSHMEM
#   sendrecv    ring exchange, 8 B, 1 MiB, 64 MiB: tessera-perf sendrecv / MPI_Sendrecv (coll_mpi.c)
#   allreduce   f32 sum, 8 B, 1 MiB, 64 MiB: tessera-perf allreduce / MPI_Allreduce (coll_mpi.c)
#   barrier     2 and 4 PEs: tessera-perf barrier / MPI_Barrier (coll_mpi.c)
#   launch      empty kernel of 1, 2, 4, 8 blocks, one PE: tessera-perf ops / an empty OpenMP parallel region
#               of as many threads (bench/omp_launch.c, libgomp defaults); each side's median batch, since
#               the other rows are means over all their iterations and a best batch would hide the very
#               interference measured here.
# The peers run under both --bind-to core and --bind-to none and keep, per row, the better: the comparison is
# against the peer as well set up as a user would set it up for this machine. Tessera runs with its defaults.
# Every measurement lands in out-dir/results.jsonl (one JSON object a line, with load, round, row, size, np,
# lib, bind and time_us; time_us null and an error field when a run failed or timed out). The report keeps
# each library's best of the rounds and prints one table per load, then Tessera under load against Tessera
# idle, marking the rows that miss the targets:
#   under load, Tessera <= 1.0x the peer and <= 2x Tessera's own idle time; an empty launch of 4 blocks < 5 us.
# QUICK=1 shrinks the run to a check of function: ping-pong 4K, 64K, 1M, one size per collective, at most
# 2000 iterations of any collective's loop and one batch of launches (the same counts for both libraries).
# Needs: openmpi-bin libopenmpi-dev (oshcc, oshrun, mpicc, mpirun) and gcc's libgomp (scripts/install-deps.sh
# bench). Exit status 1 when a measurement failed (the report still prints), else 0; a missed target is
# reported, not an error, as in the other scripts of bench/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
out="${2:-$build/bench-shared}"
QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-1}
LOADS=${LOADS:-"0 1 2"}
bash "$here/../scripts/install-deps.sh" bench
mkdir -p "$out"
res="$out/results.jsonl"
: > "$res"
run="$build/bin/tessera-run"
perf="$build/bin/tessera-perf"
py=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ncpu=$(nproc)

# The busy outside processes and the measurement running now. Started in the background of a non-interactive
# shell they ignore SIGINT, and timeout, oshrun and mpirun put their processes in process groups of their own,
# so Ctrl-C alone would leave them running: the EXIT trap ends them, by the ids this script started and no
# others, on every way out (normal end, error under set -e, INT, TERM). A measurement runs in the background
# and is waited for (go below) so that a signal runs its trap at once, not when the measurement ends.
busy=()
cur=""
stop_run() {
  if [ -n "$cur" ]; then kill -TERM "$cur" 2>/dev/null || true; wait "$cur" 2>/dev/null || true; cur=""; fi
}
stop_load() {
  local p
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${busy[@]}"; do wait "$p" 2>/dev/null || true; done
  busy=()
}
# CPU time of the whole machine from /proc/stat: "busy total" in ticks (iowait counts as idle).
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9; exit}' /proc/stat; }
start_load() {
  local i b0 t0 b1 t1
  for ((i = 0; i < $1; ++i)); do bash -c 'while :; do :; done' & busy+=($!); done
  read -r b0 t0 < <(cpu_ticks)
  sleep 0.5  # the spinners are on the CPUs, and the scheduler has placed them, before the first row starts
  read -r b1 t1 < <(cpu_ticks)
  # The CPUs busy during that half second, a record of its own: a load this script did not start (another
  # job on the machine) shifts every row of the table, the idle one too, and the reader must know.
  $py -c 'import json, sys
load, n, db, dt = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
busy = n * db / dt if dt > 0 else 0.0
print(json.dumps({"load": load, "row": "machine", "cpus": n, "busy_cpus": round(busy, 2)}))
if busy - load > 0.3:
    print(f"   WARNING: {busy:.1f} of {n} CPUs busy with {load} busy process(es) of this script: the machine has "
          f"other load, and this table measures load {load} plus it", file=sys.stderr)' \
    "$1" "$ncpu" $((b1 - b0)) $((t1 - t0)) >> "$res"
}
trap 'stop_run; stop_load' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

oshcc -O2 -o "$out/rma_oshmem" "$here/rma/rma_bench.c" "$here/rma/rma_bench_main.c"
mpicc -O2 -o "$out/coll_mpi" "$here/coll_mpi.c"
cc -O2 -fopenmp -o "$out/omp_launch" "$here/omp_launch.c"

# QUICK: three ping-pong sizes up to 1M (-f 16), one collective size, and one timed batch of launches (the
# median of one batch is that batch), so that a check of function stays within minutes even under load.
if [ "$QUICK" = 1 ]; then
  rma_ranges="4K:1M:0"; rma_f=16; coll_sizes=1048576; batches=1; limit=120
else
  rma_ranges="4K:64K:100000 256K:256K:20000 1M:1M:3000 4M:16M:300"; rma_f=4; coll_sizes="8 1048576 67108864"; batches=5; limit=600
fi
launch_blocks="1 2 4 8"
# A run that outlives $limit seconds is recorded as failed and the script goes on: under load a library that
# hands its CPU back too rarely can stall for long, and that is a finding for the table, not a reason to hang.

# Iterations per size: enough that every row lasts 100 ms or more, dozens of scheduler slices (see rma_range):
# 1 MiB collectives, 80-500 us a call here, got 30 (those of coll_compare.sh, a few milliseconds a row) until
# 2026-11-27, and beside a busy process such a row read anything from the idle time to four times it, as the
# slices fell. A barrier of more PEs than CPUs, which costs milliseconds a call once every CPU is busy, 5000.
# QUICK caps them at 2000. Both libraries always get the same count.
iters_for() {
  local b=$1 n
  if [ "$b" -ge $((16 << 20)) ]; then n=8; elif [ "$b" -ge $((1 << 20)) ]; then n=1000
  elif [ "$b" -ge 65536 ]; then n=200; elif [ "$b" -ge 4096 ]; then n=20000; else n=50000; fi
  [ "$QUICK" = 1 ] && [ "$n" -gt 2000 ] && n=2000
  echo "$n"
}

# Turns one run's output ($out/last.out) into records of results.jsonl. Kinds: rma (rma_bench --json),
# tcoll (tessera-perf <coll> --json), mcoll (coll_mpi lines), tops (tessera-perf ops text), omp (omp_launch
# lines), fail (no output; argv[7] says why). Run after the job has ended: a Python starting up while the PEs
# run would take CPU from them.
parse='
import json, re, sys
kind, load, rnd, row, lib, bind = sys.argv[1:7]
base = {"load": int(load), "round": int(rnd), "row": row, "lib": lib, "bind": bind}
recs = []
text = open(sys.argv[8]).read() if kind != "fail" else ""
if kind == "rma":
    d = json.loads(text[text.index("{"):])
    recs = [dict(base, size=r["size"], np=2, time_us=r["pingpong_us"]) for r in d["rma"]]
elif kind == "tcoll":
    d = json.loads(text[text.index("{"):])
    recs = [dict(base, size=int(sys.argv[9]), np=d["ranks"], time_us=r["time_us"]) for r in d["results"]]
elif kind in ("mcoll", "omp"):
    for line in text.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if kind == "mcoll": recs.append(dict(base, size=d["bytes"], np=d["np"], time_us=d["time_us"]))
            else: recs.append(dict(base, size=d["blocks"], np=1, time_us=d["median_us"], best_us=d["best_us"]))
elif kind == "tops":
    for m in re.finditer(r"launch empty kernel, (\d+) blk\s+([0-9.]+)\s+([0-9.]+)", text):
        recs.append(dict(base, size=int(m.group(1)), np=1, time_us=float(m.group(3)), best_us=float(m.group(2))))
else:
    np_, size, why = sys.argv[7].split(":", 2)
    recs = [dict(base, size=int(size), np=int(np_), time_us=None, error=why)]
if not recs:
    raise SystemExit(f"shared_cpus: no measurement in the output of {lib} {row}")
for r in recs: print(json.dumps(r))
'
failed=0
# rec KIND ROW LIB BIND [EXTRA]: parse $out/last.out into results.jsonl.
rec() { $py -c "$parse" "$1" "$load" "$round" "$2" "$3" "$4" "${5:-}" "$out/last.out" "${5:-}" >> "$res"; }
# fail ROW LIB BIND NP SIZES WHY: one failed record per size, and the run's last output lines on stderr.
fail() {
  local s
  echo "   $2 $1 (bind $3, np $4) failed: ${6:-no measurement in its output}" >&2
  tail -n 5 "$out/last.err" 2>/dev/null | sed 's/^/     | /' >&2 || true
  for s in $5; do $py -c "$parse" fail "$load" "$round" "$1" "$2" "$3" "$4:$s:$6" >> "$res"; done
  failed=1
}
# go CMD...: runs a measurement into last.out/last.err; sets why to the reason it failed, empty on success.
go() {
  local rc=0
  why=""
  "$@" > "$out/last.out" 2> "$out/last.err" &
  cur=$!
  wait "$cur" || rc=$?
  cur=""
  if [ $rc -eq 124 ]; then why="timeout after ${limit}s"; elif [ $rc -ne 0 ]; then why="exit status $rc"; fi
}
# The peers' binding: with more processes than CPUs, binding to a core needs Open MPI's explicit permission
# to put two on one core (that is what --bind-to core means there).
bind_opt() { if [ "$1" = core ] && [ "$2" -gt "$ncpu" ]; then echo core:overload-allowed; else echo "$1"; fi; }
# The order of the peer's two settings alternates with the round too, so neither is always first after Tessera.
binds() { if [ $((round % 2)) -eq 1 ]; then echo "core none"; else echo "none core"; fi; }
rma_sizes() {  # MIN MAX (K/M suffixes) -> the sizes of the range, factor $rma_f
  $py -c 'import sys
v = lambda x: int(x[:-1]) << {"K": 10, "M": 20}[x[-1]]
s, m, f = v(sys.argv[1]), v(sys.argv[2]), int(sys.argv[3])
while s <= m: print(s); s *= f' "$1" "$2" "$rma_f"
}

# The ping-pong runs in size ranges "MIN:MAX:ROUNDS" (ROUNDS 0: rma_bench's own count). Every size gets
# rounds enough for a row of 100 ms or more, dozens of scheduler slices: a row of a few milliseconds under
# outside load measures whether the slices happened to fall inside it, not how a library copes with them.
# (Until 2026-11-27 the sizes from 256K took rma_bench's own count, 40-200 ms a row idle: beside two busy
# processes OSHMEM's 4 MiB row read 0.7 ms then and 1.0-3.3 ms at 500 rounds.)
rma_range() {  # MIN:MAX:ROUNDS -> "-b MIN -e MAX -f F [-p ROUNDS]"
  local min max n
  IFS=: read -r min max n <<< "$1"
  echo "-b $min -e $max -f $rma_f$([ "$n" != 0 ] && echo " -p $n")"
}
range_sizes() { local min max n; IFS=: read -r min max n <<< "$1"; rma_sizes "$min" "$max"; }
tessera_rma() {
  local r
  for r in $rma_ranges; do
    # shellcheck disable=SC2046
    go env SHMEM_SYMMETRIC_SIZE=512M "$run" -n 2 --timeout "$limit" "$perf" rma $(rma_range "$r") --json
    [ -z "$why" ] && rec rma pingpong tessera default || fail pingpong tessera default 2 "$(range_sizes "$r")" "$why"
  done
}
oshmem_rma() {
  local b r
  for b in $(binds); do
    for r in $rma_ranges; do
      # shellcheck disable=SC2046
      go env SHMEM_SYMMETRIC_SIZE=512M SMA_SYMMETRIC_SIZE=512M timeout -k 10 "$limit" oshrun --oversubscribe --mca osc ^rdma \
        --bind-to "$(bind_opt "$b" 2)" -np 2 "$out/rma_oshmem" $(rma_range "$r") --json
      [ -z "$why" ] && rec rma pingpong oshmem "$b" || fail pingpong oshmem "$b" 2 "$(range_sizes "$r")" "$why"
    done
  done
}
barrier_iters() { [ "$1" = barrier ] && [ "$2" -gt "$ncpu" ] && [ "$3" -gt 5000 ] && echo 5000 || echo "$3"; }
tessera_coll() {  # np coll bytes
  local it
  it=$(barrier_iters "$2" "$1" "$(iters_for "$3")")
  go "$run" -n "$1" --timeout "$limit" "$perf" "$2" -b "$3" -e "$3" -n "$it" -w $((it / 4 + 1)) -z 0 --json
  [ -z "$why" ] && rec tcoll "$2" tessera default "$3" || fail "$2" tessera default "$1" "$3" "$why"
}
mpi_coll() {  # np coll bytes
  local b it
  it=$(barrier_iters "$2" "$1" "$(iters_for "$3")")
  for b in $(binds); do
    go env COLL_MPI_ITERS="$it" timeout -k 10 "$limit" mpirun --oversubscribe --bind-to "$(bind_opt "$b" "$1")" \
      -np "$1" "$out/coll_mpi" "$2" "$3"
    [ -z "$why" ] && rec mcoll "$2" openmpi "$b" || fail "$2" openmpi "$b" "$1" "$3" "$why"
  done
}
# tessera-perf ops times its empty-kernel launch at 1, 2, 4 and 8 blocks when -b is 4 or more (-b sets the
# blocks of the operator rows, which --only/-m keep to one small row here), so one run gives all its rows.
tessera_launch() {
  go "$run" -n 1 --timeout "$limit" "$perf" ops -b 4 --only sum_all -t f32 -m 1 -i "$batches"
  [ -z "$why" ] && rec tops launch tessera default || fail launch tessera default 1 "$launch_blocks" "$why"
}
omp_launch() {
  go timeout -k 10 "$limit" "$out/omp_launch" -n 2000 -i "$batches" $launch_blocks
  [ -z "$why" ] && rec omp launch openmp default || fail launch openmp default 1 "$launch_blocks" "$why"
}

# One row: Tessera and the peer back to back, Tessera first in odd rounds, the peer first in even ones.
pair() {  # tessera-cmd peer-cmd args...
  local t=$1 p=$2
  shift 2
  if [ $((round % 2)) -eq 1 ]; then "$t" "$@"; "$p" "$@"; else "$p" "$@"; "$t" "$@"; fi
}

for load in $LOADS; do
  start_load "$load"
  for ((round = 1; round <= ROUNDS; ++round)); do
    echo "== load $load (busy processes on $ncpu CPUs), round $round of $ROUNDS" >&2
    echo "   [${SECONDS}s] ping-pong $rma_ranges" >&2
    pair tessera_rma oshmem_rma
    for b in $coll_sizes; do echo "   [${SECONDS}s] sendrecv $b" >&2; pair tessera_coll mpi_coll 2 sendrecv "$b"; done
    for b in $coll_sizes; do echo "   [${SECONDS}s] allreduce $b" >&2; pair tessera_coll mpi_coll 2 allreduce "$b"; done
    for np in 2 4; do echo "   [${SECONDS}s] barrier $np PEs" >&2; pair tessera_coll mpi_coll "$np" barrier 8; done
    echo "   [${SECONDS}s] launch $launch_blocks blocks" >&2
    pair tessera_launch omp_launch
  done
  stop_load
done
echo "   [${SECONDS}s] done" >&2

$py - "$res" "$LOADS" <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
recs = [r for r in lines if r["row"] != "machine"]
busy = {r["load"]: r["busy_cpus"] for r in lines if r["row"] == "machine"}
loads = [int(x) for x in sys.argv[2].split()]
peer_name = {"pingpong": "OSHMEM", "sendrecv": "Open MPI", "allreduce": "Open MPI", "barrier": "Open MPI",
             "launch": "OpenMP"}
order = ["pingpong", "sendrecv", "allreduce", "barrier", "launch"]

def size_name(b):
    for unit, sh in (("M", 20), ("K", 10)):
        if b >= 1 << sh and b % (1 << sh) == 0: return f"{b >> sh}{unit}"
    return f"{b}B"

def label(row, size, np):
    if row == "barrier": return f"barrier {np} PEs"
    if row == "launch": return f"launch {size} blk"
    return f"{row} {size_name(size)}"

keys = sorted({(r["row"], r["size"], r["np"]) for r in recs}, key=lambda k: (order.index(k[0]), k[2], k[1]))

def best(load, key, tessera):
    """Best time of the rounds (and, for the peer, of the bindings); (time, bind) or (None, why)."""
    rs = [r for r in recs if r["load"] == load and (r["row"], r["size"], r["np"]) == key
          and (r["lib"] == "tessera") == tessera]
    ok = [r for r in rs if r["time_us"] is not None]
    if ok:
        r = min(ok, key=lambda r: r["time_us"])
        return r["time_us"], r["bind"]
    return None, ("fail" if rs else "n/a")

LAUNCH_TARGET_US, PEER_TARGET, SELF_TARGET = 5.0, 1.0, 2.0
def fmt(v, w=10): return f"{v:{w}.3f}" if v is not None else f"{'-':>{w}}"

misses = {}
for load in loads:
    seen = f", {busy[load]:.1f} of the CPUs busy before the rows" if load in busy else ""
    if load in busy and busy[load] - load > 0.3: seen += " (NOT only this script's load: other jobs ran too)"
    print(f"\n== load {load}: {load} busy process(es){seen}; best of the rounds; us (launch: median batch)")
    print(f"{'row':<18} {'Tessera':>10} {'peer':>10} {'(peer, binding won)':<22} {'T/peer':>7}  target")
    for key in keys:
        t, tb = best(load, key, True)
        p, pb = best(load, key, False)
        ratio = t / p if t is not None and p is not None else None
        marks = []
        if load > 0 and ratio is not None and ratio > PEER_TARGET: marks.append(f"{ratio:.2f}x peer")
        if key[0] == "launch" and key[1] == 4 and t is not None and t >= LAUNCH_TARGET_US:
            marks.append(f"{t:.1f} us >= {LAUNCH_TARGET_US:.0f}")
        if marks: misses.setdefault(key, []).append(f"load {load}: " + ", ".join(marks))
        verdict = "MISS: " + ", ".join(marks) if marks else "ok" if load > 0 else "-"
        # A failed run is no result, not a miss: the run's own error, printed above, says why.
        gone = [w for w in (t is None and "Tessera " + tb, p is None and "peer " + pb) if w]
        if gone: verdict = "no result (" + ", ".join(gone) + ")" + ("; " + verdict if marks else "")
        bind = f"{peer_name[key[0]]}, {pb}" if p is not None else peer_name[key[0]]
        ratio_s = f"{ratio:6.2f}x" if ratio is not None else "-"
        print(f"{label(*key):<18} {fmt(t)} {fmt(p)} {'(' + bind + ')':<22} {ratio_s:>7}  {verdict}")

under = [l for l in loads if l > 0]
if 0 in loads and under:
    print(f"\n== Tessera under load / Tessera idle (target <= {SELF_TARGET:.0f}x); MISS: a target missed in any table")
    print(f"{'row':<18} {'idle us':>10} " + " ".join(f"{f'load {l}':>8}" for l in under) + "  targets")
    for key in keys:
        t0, _ = best(0, key, True)
        cells = []
        for l in under:
            t, _ = best(l, key, True)
            s = t / t0 if t is not None and t0 else None
            cells.append(f"{s:7.2f}x" if s is not None else f"{'-':>8}")
            if s is not None and s > SELF_TARGET:
                misses.setdefault(key, []).append(f"load {l}: {s:.2f}x idle")
        m = misses.get(key)
        if t0 is None and key[0] == "launch" and not any(best(l, key, True)[0] for l in loads):
            note = "not measured for Tessera (tessera-perf ops launches 1, 2 and 4 blocks)"
        else:
            note = ("MISS (" + "; ".join(m) + ")") if m else "ok"
        print(f"{label(*key):<18} {fmt(t0)} " + " ".join(cells) + "  " + note)
n = sum(1 for k in keys if misses.get(k))
print(f"\n{n} of {len(keys)} rows miss a target; every measurement: {sys.argv[1]}")
PY
exit $failed
