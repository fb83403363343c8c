#!/usr/bin/env bash
# Tessera across hosts, side by side with the link's own limits and the peers, in one run, on two namespace
# hosts of this machine (tests/hosts/netns.sh: veth links on a bridge, private network stacks).
#   [SIZES="8 1048576 67108864"] [ROUNDS=5] [RATE=1gbit] bash bench/hosts_compare.sh [build-dir] [out-dir]
# Measures, in this order:
#   the link: iperf3 one stream and --bidir (each way), raw TCP ping-pong of 8 bytes (bench/tcp_pingpong.c)
#   RMA, 1 PE per host: tessera-perf rma (mpirun -> PMIx) and the same source built with oshcc under oshrun
#     with OSHMEM's UCX layer on TCP (--mca spml ucx, UCX_TLS=self,tcp; bounded by a timeout: it has hung)
#   allreduce, allgather, alltoall, broadcast at SIZES, 1 and 2 PEs per host: Tessera (tessera-perf under
#     mpirun), Open MPI (bench/coll_mpi.c; ob1 with btl tcp,vader,self: vader between the PEs of a host, as a
#     careful user would) and PyTorch's gloo (bench/hosts_gloo.py, one process per rank, GLOO_SOCKET_IFNAME)
#   allreduce at SIZES, 1 and 2 PEs per host, every row across hosts forced: the row the model picks against
#   the best of them
#   the cost model: every Tessera row carries the row its job chose and the job's estimate (tessera-perf
#   --json); tessera-info --predict, given the link and contention the job measured, must print the same
# PEERS=none: Tessera's rows alone (no OSHMEM, Open MPI or gloo runs; the report leaves their columns empty),
# for work on the cost model, whose table needs Tessera's rows and estimates only.
# ROUNDS (default 1): the collectives' rows are measured that many times, alternating the libraries row by row
# (Tessera, Open MPI, then gloo's sizes of the collective); the report takes each library's median over the
# rounds (a peer's time of a round is its better congestion control in that round).
# Every launcher runs inside host h1 (the root namespace has no address on the hosts' network); Open MPI's
# daemons reach h2 through tests/hosts/rsh. Writes results.jsonl and prints the ratio table.
# TCP congestion control: Tessera's connections use cubic (TESSERA_NET_CONGESTION); the peers have no such
# setting, so they and iperf3 run twice, under the hosts' default (the machine's, which the namespaces
# inherit) and with the hosts' default set to cubic, and the report takes each one's better per row (the
# default alone where the namespaces may not set it; the run says so).
# Needs root and scripts/install-deps.sh bench (Open MPI, iperf3); gloo runs on build/venv's PyTorch 2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
torch_py=$(bash "$here/../scripts/torch-env.sh" "$build")  # the PyTorch 2 the backend is built with (build/venv)
out=${2:-$build/bench-hosts}
mkdir -p "$out"
out=$(cd "$out" && pwd)
res=$out/results.jsonl
: > "$res"
bash "$root/scripts/install-deps.sh" bench
. "$root/tests/hosts/netns.sh"
hosts_require_root
trap hosts_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_up 2
# RATE=1gbit (or 10gbit, ...): every host's link limited by tc tbf (tests/hosts/netns.sh: hosts_link), for the
# peers as for Tessera; unset: the plain veth links.
[ -n "${RATE:-}" ] && hosts_link rate="$RATE"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=/usr/bin/python3
SIZES=${SIZES:-"8 65536 1048576 16777216 67108864 268435456"}
ROUNDS=${ROUNDS:-1}
PEERS=${PEERS:-all}
[ "$PEERS" = all ] || [ "$PEERS" = none ] || { echo "hosts_compare: PEERS is '$PEERS'; it must be all or none" >&2; exit 2; }
peers() { [ "$PEERS" = all ]; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "hosts_compare: ROUNDS is '$ROUNDS'; it must be a whole number from 1" >&2; exit 2; }
cc -O2 -o "$out/tcp_pingpong" "$here/tcp_pingpong.c"
mpicc -O2 -o "$out/coll_mpi" "$here/coll_mpi.c"
oshcc -O2 -o "$out/rma_oshmem" "$here/rma/rma_bench.c" "$here/rma/rma_bench_main.c"
h2=$(cat "$NETNS_HOSTS_DIR/h2.addr")
h1=$(cat "$NETNS_HOSTS_DIR/h1.addr")
emit() { echo "$1" >> "$res"; echo "$1"; }
# The hosts' default congestion control: the inherited one (default) or cubic, on both hosts.
cc_default=$(host_exec h1 sysctl -n net.ipv4.tcp_congestion_control)
hosts_cc() {
  local name=$cc_default; [ "$1" = cubic ] && name=cubic
  for h in h1 h2; do host_exec $h sysctl -qw net.ipv4.tcp_congestion_control=$name; done
}
# Some kernels refuse the setting inside a namespace ("Operation not permitted", or only some algorithms
# allowed there): the peers then run under the default alone, and the report says so.
ccs="default cubic"
cubic_settable() {
  local h
  for h in h1 h2; do host_exec $h sysctl -qw net.ipv4.tcp_congestion_control=cubic 2>/dev/null || return 1; done
}
if ! cubic_settable; then
  ccs=default
  echo "note: the hosts' congestion control cannot be set to cubic here; the peers run under the default" \
       "($cc_default) only" >&2
fi
for h in h1 h2; do host_exec $h sysctl -qw net.ipv4.tcp_congestion_control="$cc_default" 2>/dev/null || true; done
emit "{\"lib\":\"congestion\",\"default\":\"$cc_default\",\"cubic_settable\":$([ "$ccs" = default ] && echo false || echo true)}"

echo "== the link" >&2
for cc in $ccs; do
  hosts_cc $cc
  host_exec h2 iperf3 -s -1 -D >/dev/null 2>&1; sleep 0.5
  one=$(host_exec h1 iperf3 -c "$h2" -t 4 -J | $py -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e9)')
  host_exec h2 iperf3 -s -1 -D >/dev/null 2>&1; sleep 0.5
  bidir=$(host_exec h1 iperf3 -c "$h2" -t 4 --bidir -J | $py -c 'import json,sys; e=json.load(sys.stdin)["end"];
print(min(e["sum_received"]["bits_per_second"], e["sum_received_bidir_reverse"]["bits_per_second"])/8e9)')
  host_exec h2 "$out/tcp_pingpong" server 17001 8 20000 & sleep 0.3
  hop=$(host_exec h1 "$out/tcp_pingpong" client "$h2" 17001 8 20000); wait
  emit "{\"lib\":\"link\",\"cc\":\"$cc\",\"iperf3_GBps\":$one,\"iperf3_bidir_GBps\":$bidir,\"tcp_hop_us\":$hop}"
done
hosts_cc default

mpirun_() {  # np ppn prog...
  local np=$1 ppn=$2; shift 2
  host_exec h1 timeout 900 mpirun --host "h1:$ppn,h2:$ppn" -np "$np" --map-by ppr:"$ppn":node --bind-to none \
    --mca plm_rsh_agent "$root/tests/hosts/rsh" --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
    --mca pml ob1 --mca btl tcp,vader,self env -u NETNS_HOSTS_DIR "$@"
}

echo "== RMA, 1 PE per host" >&2
for range in "-b 8 -e 8" "-b 1048576 -e 67108864 -f 64"; do
  # shellcheck disable=SC2086
  mpirun_ 2 1 "$build/bin/tessera-perf" rma $range --json 2>/dev/null |
    $py -c 'import json,sys; [print(json.dumps({"lib":"tessera","rma":r})) for r in json.load(sys.stdin)["rma"]]' |
    while read -r l; do emit "$l"; done
  for cc in $ccs; do
    peers || break
    hosts_cc $cc
    # shellcheck disable=SC2086
    if ! host_exec h1 timeout 120 oshrun --host h1,h2 -np 2 --mca plm_rsh_agent "$root/tests/hosts/rsh" \
         --mca oob_tcp_if_include eth0 --mca spml ucx -x UCX_TLS=self,tcp -x UCX_NET_DEVICES=eth0 \
         -x SHMEM_SYMMETRIC_SIZE=512M -x SMA_SYMMETRIC_SIZE=512M env -u NETNS_HOSTS_DIR "$out/rma_oshmem" $range --json \
         > "$out/oshmem.json" 2> "$out/oshmem.err"; then
      emit "{\"lib\":\"oshmem\",\"cc\":\"$cc\",\"rma_failed\":\"$range: $(tail -1 "$out/oshmem.err" | tr -d '"' | cut -c1-120) (exit or timeout)\"}"
    else
      $py -c 'import json,sys; [print(json.dumps({"lib":"oshmem","cc":sys.argv[2],"rma":r})) for r in json.load(open(sys.argv[1]))["rma"]]' \
        "$out/oshmem.json" "$cc" | while read -r l; do emit "$l"; done
    fi
  done
  hosts_cc default
done

echo "== progress while the target computes (the UCX progress thread on, then off)" >&2
"$build/bin/tessera-cc" -O2 -o "$out/progress_bench" "$here/rma/progress_bench.c"
for pt in on off; do
  r=$(mpirun_ 2 1 env TESSERA_UCX_PROGRESS_THREAD=$pt "$out/progress_bench" 2 2>/dev/null | tail -1)
  emit "{\"lib\":\"tessera-progress-$pt\",\"progress\":${r:-null}}"
done

# Calls per row, the same for Tessera and Open MPI: rows of a few milliseconds measured whether a stall of
# the namespace hosts' shared CPUs fell inside them (an alltoall of 1 MiB read 695 us in a row of 20 calls,
# 163-171 us in rows of 200), so every row lasts tens of milliseconds.
iters_for() { local b=$1; if [ "$b" -ge $((64 << 20)) ]; then echo 4; elif [ "$b" -ge $((16 << 20)) ]; then echo 8;
              elif [ "$b" -ge $((1 << 20)) ]; then echo 200; elif [ "$b" -ge 65536 ]; then echo 1000; else echo 5000; fi; }
gloo() {  # np ppn coll sizes...
  local np=$1 ppn=$2 coll=$3; shift 3
  local r port=$((29500 + RANDOM % 1000))
  for ((r = 1; r < np; r++)); do
    host_exec "h$((r / ppn + 1))" env -u NETNS_HOSTS_DIR "$torch_py" "$here/hosts_gloo.py" $r "$np" "$h1" $port "$coll" "$@" > /dev/null 2>&1 &
  done
  host_exec h1 env -u NETNS_HOSTS_DIR timeout 900 "$torch_py" "$here/hosts_gloo.py" 0 "$np" "$h1" $port "$coll" "$@" 2>/dev/null |
    $py -c 'import json,sys; [print(json.dumps(dict(json.loads(l), cc=sys.argv[1], round=int(sys.argv[2])))) for l in sys.stdin if l.strip()]' "${GLOO_CC:-default}" "${GLOO_ROUND:-1}" |
    while read -r l; do emit "$l"; done
  wait
}
for ppn in 1 2; do
  np=$((2 * ppn))
  for coll in allreduce allgather alltoall broadcast; do
    echo "== $coll, $ppn PE(s) per host" >&2
    for b in $SIZES; do
      # allgather and alltoall split the buffer among the ranks: at least one 4-byte element each.
      { [ "$coll" = allgather ] || [ "$coll" = alltoall ]; } && [ "$b" -lt $((4 * np)) ] && b=$((4 * np))
      it=$(iters_for "$b")
      # Broadcast in place (one buffer, as MPI_Bcast and torch.distributed.broadcast); the rest out of place.
      z=0 key=time_us
      [ "$coll" = broadcast ] && z=1 key=inplace_time_us
      for ((round = 1; round <= ROUNDS; round++)); do
        mpirun_ $np $ppn "$build/bin/tessera-perf" "$coll" -b "$b" -e "$b" -n "$it" -w $((it / 4 + 1)) -z $z --json \
          2>/dev/null | ROUND=$round $py "$here/hosts_row.py" tessera "$coll" "$ppn" "$key" |
          while read -r l; do emit "$l"; done
        for cc in $ccs; do
          peers || break
          hosts_cc $cc
          COLL_MPI_ITERS=$it mpirun_ $np $ppn "$out/coll_mpi" "$coll" "$b" 2>/dev/null |
            $py -c 'import json,sys; [print(json.dumps(dict(json.loads(l), ppn=int(sys.argv[1]), cc=sys.argv[2], round=int(sys.argv[3])))) for l in sys.stdin if l.strip()]' "$ppn" "$cc" "$round" |
            while read -r l; do emit "$l"; done
        done
        hosts_cc default
      done
    done
    sizes=""
    for b in $SIZES; do
      { [ "$coll" = allgather ] || [ "$coll" = alltoall ]; } && [ "$b" -lt $((4 * np)) ] && b=$((4 * np))
      sizes="$sizes $b"
    done
    for ((round = 1; round <= ROUNDS; round++)); do
      for cc in $ccs; do
        peers || break
        hosts_cc $cc
        # shellcheck disable=SC2086
        GLOO_CC=$cc GLOO_ROUND=$round gloo $np $ppn "$coll" $sizes
      done
    done
    hosts_cc default
  done
done

echo "== allreduce, every row across hosts forced" >&2
for ppn in 1 2; do
  rows="leaders leaders_rd flat_ring"; [ $ppn -gt 1 ] && rows="rails rails_rd $rows"
  for b in $SIZES; do
    it=$(iters_for "$b")
    for row in $rows; do
      mpirun_ $((2 * ppn)) $ppn "$build/bin/tessera-perf" allreduce -a "$row" -b "$b" -e "$b" -n "$it" -w $((it / 4 + 1)) \
        -z 0 --json 2>/dev/null | $py "$here/hosts_row.py" tessera-forced allreduce "$ppn" time_us |
        while read -r l; do emit "$l"; done
    done
  done
done

echo "== the cost model: tessera-info --predict with each job's link and contention" >&2
# One line per Tessera row: collective, PEs per host, bytes per rank, the job's link and contention.
$py -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("lib") == "tessera" and "link" in r:
        print(r["coll"], r["ppn"], r["bytes"], r["rank_bytes"], r["link"], r["contention"], int(r["cma"]), r.get("round", 1))' "$res" |
while read -r coll ppn b rank_bytes link k cma round; do
  host_exec h1 env -u NETNS_HOSTS_DIR TESSERA_COLL_CMA=$cma "$build/bin/tessera-info" --predict --hosts 2 --ppn "$ppn" --coll "$coll" \
    --bytes "$rank_bytes" --contention "$k" --unbound --link "$link" |
    $py -c 'import json,re,sys; t=sys.stdin.read(); c=re.search(r"choice: (\w+)", t).group(1)
m=re.search(r"^\s+"+c+r"\s+([0-9.]+)\s", t, re.M)
print(json.dumps({"lib":"tessera-info","coll":sys.argv[1],"ppn":int(sys.argv[2]),"bytes":int(sys.argv[3]),"algo":c,
                  "predicted_us":float(m.group(1)),"round":int(sys.argv[4])}))' "$coll" "$ppn" "$b" "$round" |
    while read -r l; do emit "$l"; done
done

$py "$here/hosts_report.py" "$res"
