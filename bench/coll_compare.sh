#!/usr/bin/env bash
# Tessera collectives side by side with Open MPI 4.1 (MPI_Allreduce & co.) and PyTorch gloo, at 2 and 4
# ranks, in one run; prints the ratio table against the project's targets and draws the bandwidth curves.
# Tessera runs with ordinary buffers (the targets) and, at 64 MiB, also with symmetric-heap buffers (sym).
#   [ROUNDS=5] bash bench/coll_compare.sh [build-dir] [out-dir]
# The rows the project's targets are set on are measured ROUNDS times, alternating libraries; the report
# keeps each library's best time of a row.
# Installs what it needs (scripts/install-deps.sh bench: openmpi-bin libopenmpi-dev python3-matplotlib); gloo
# runs on build/venv's PyTorch 2 (scripts/torch-env.sh).
# Each (collective, size) is measured by the three libraries back to back, so drift of the shared machine
# affects them alike; compare ratios, not absolute numbers from different runs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
bash "$here/../scripts/install-deps.sh" bench
torch_py=$(bash "$here/../scripts/torch-env.sh" "$build")  # the PyTorch 2 the backend is built with (build/venv)
out="${2:-$build/bench-coll}"
mkdir -p "$out"
res="$out/results.jsonl"
: > "$res"
run="$build/bin/tessera-run"
perf="$build/bin/tessera-perf"
mpicc -O2 -o "$out/coll_mpi" "$here/coll_mpi.c"
cc -O2 -o "$out/line_pingpong" "$here/rma/line_pingpong.c"
cc -O2 -o "$out/barrier_floor" "$here/barrier_floor.c"
# The hardware floor of the latency rows at that moment: on a virtual machine the cache-line hop between the
# two CPUs changes with where the host places them (57-214 ns within minutes on a Zen 3 VM), and every
# library's small-message figures follow it.
hop() { echo "   $1 (cache-line hop: $("$out/line_pingpong" | sed -n 's/.*: \([0-9.]*\) ns.*/\1/p') ns)" >&2; }
mpirun_() { mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$@"; }
py=/usr/bin/python3

# Iterations per size, the same as coll_mpi.c's: sub-microsecond calls need 20000 for the timing to outlast
# the jitter of the first calls of a job.
iters_for() { local b=$1; if [ "$b" -ge $((16 << 20)) ]; then echo 8; elif [ "$b" -ge $((1 << 20)) ]; then echo 30;
              elif [ "$b" -ge 65536 ]; then echo 200; elif [ "$b" -ge 4096 ]; then echo 2000; else echo 20000; fi; }

# Broadcast is timed in place, the form MPI_Bcast and torch.distributed.broadcast have (one buffer; out of
# place, as ncclBroadcast, the root also copies its input to its output); every other collective out of place.
tessera() {  # np coll bytes [lib tessera-perf-options...]  (lib tessera-sym: --symmetric buffers)
  local np=$1 coll=$2 b=$3 lib=${4:-tessera} it z=0 key=time_us
  shift 3; [ $# -gt 0 ] && shift
  [ "$coll" = broadcast ] && z=1 key=inplace_time_us
  it=$(iters_for "$b")
  # Into a file first: a Python reading the pipe would start up (tens of ms of CPU) while the PEs run.
  "$run" -n "$np" "$perf" "$coll" -b "$b" -e "$b" -n "$it" -w $((it / 4 + 1)) -z $z --json "$@" > "$out/last.json"
  $py -c 'import json,sys; d=json.load(open(sys.argv[5])); r=d["results"][0];
print(json.dumps({"lib":sys.argv[3],"coll":sys.argv[1],"np":d["ranks"],"bytes":int(sys.argv[2]),"time_us":r[sys.argv[4]]}))' \
    "$coll" "$b" "$lib" "$key" "$out/last.json" >> "$res"
}
mpi() { mpirun_ "$1" "$out/coll_mpi" "$2" "$3" >> "$res" 2>/dev/null; }
# The barrier rows' floor: plain processes passing flags, no library (bench/barrier_floor.c).
floor() { "$out/barrier_floor" "$1" >> "$res" || echo "barrier_floor np=$1 failed" >&2; }
gloo() { $torch_py "$here/coll_gloo.py" "$1" "$2" "$3" >> "$res" 2>/dev/null || echo "gloo $2 np=$1 failed" >&2; }

ROUNDS=${ROUNDS:-5}
sweep="8 64 512 4096 32768 262144 524288 2097152 16777216 67108864"
M64=67108864
for np in 2 4; do
  echo "== $np ranks" >&2
  hop "round 1"
  for b in $sweep; do
    echo "   allreduce $b" >&2
    tessera "$np" allreduce "$b"; mpi "$np" allreduce "$b"; gloo "$np" allreduce "$b"
  done
  tessera "$np" allreduce $M64 tessera-sym --symmetric  # symmetric buffers: the zero-copy path
  for coll in reduce_scatter allgather alltoall broadcast; do
    echo "   $coll 64M" >&2
    tessera "$np" "$coll" $M64; tessera "$np" "$coll" $M64 tessera-sym --symmetric; mpi "$np" "$coll" $M64
    case $coll in allgather|broadcast) gloo "$np" "$coll" $M64 ;; esac
  done
  echo "   barrier" >&2
  tessera "$np" barrier 8; mpi "$np" barrier 8; floor "$np"
  # The rows the targets are set on, measured ROUNDS times in all (alternating libraries): the report keeps
  # each library's best, so a burst of load from the machine's neighbours in one round does not decide a ratio.
  for ((round = 2; round <= ROUNDS; ++round)); do
    hop "round $round: target rows"
    for b in 8 524288 $M64; do tessera "$np" allreduce "$b"; mpi "$np" allreduce "$b"; done
    [ "$np" = 2 ] && gloo "$np" allreduce $M64
    for coll in reduce_scatter allgather alltoall broadcast; do tessera "$np" "$coll" $M64; mpi "$np" "$coll" $M64; done
    tessera "$np" barrier 8; mpi "$np" barrier 8; floor "$np"
  done
done
$py "$here/coll_report.py" "$res" "$out/coll_bandwidth.png"
