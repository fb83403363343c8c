#!/usr/bin/env bash
# Compressed allreduce across two namespace hosts on emulated links (tests/hosts/netns.sh: hosts_link, tc
# tbf; these kernels may lack netem, so no delay is added): Tessera's 64 MiB float32 sum allreduce with the
# phase between hosts uncompressed, bf16, fp8 and int8 (TESSERA_COMPRESS, with error feedback), Open MPI
# (bench/coll_mpi.c, ob1/tcp) and PyTorch's gloo (bench/hosts_gloo.py) on the same link, alternated round by
# round; 1 and 2 PEs per host; at each RATE. Prints one JSON line per run and, per link and layout, the
# median times, the effective bandwidth (bytes / time) and the ratios. COLL=allgather measures the float32
# allgather instead, coded by TESSERA_COMPRESS_ALLGATHER (no feedback), at tessera-perf's sizes.
# WHOLE=1 (allreduce) runs each code a second time with the pipeline off (TESSERA_COMPRESS_PIECE as large as
# the buffer: code all, send, decode all), as "<code>-whole", alternated with the pipelined runs.
#   [COLL=allreduce|allgather] [RATES="1gbit 10gbit"] [ROUNDS=3] [BYTES=67108864] [WHOLE=] bash bench/compress_compare.sh [build-dir]
# Needs root and scripts/install-deps.sh bench (Open MPI); gloo runs on build/venv's PyTorch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
torch_py=$(bash "$here/../scripts/torch-env.sh" "$build")
# shellcheck source=../tests/hosts/netns.sh disable=SC1091
. "$root/tests/hosts/netns.sh"
hosts_require_root
out=$(mktemp -d)
trap 'hosts_down; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_up 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RATES=${RATES:-"1gbit 10gbit"}
ROUNDS=${ROUNDS:-3}
BYTES=${BYTES:-67108864}
COLL=${COLL:-allreduce}
case $COLL in
  allreduce) knob=TESSERA_COMPRESS ;;
  allgather) knob=TESSERA_COMPRESS_ALLGATHER ;;
  *) echo "compress_compare.sh: COLL=$COLL is not allreduce or allgather" >&2; exit 2 ;;
esac
py=/usr/bin/python3
mpicc -O2 -o "$out/coll_mpi" "$here/coll_mpi.c"
h1=$(cat "$NETNS_HOSTS_DIR/h1.addr")
res=$out/results.jsonl
emit() { echo "$1" >> "$res"; echo "$1"; }
mpirun_() {  # np ppn prog...
  local np=$1 ppn=$2; shift 2
  host_exec h1 timeout 900 mpirun --host "h1:$ppn,h2:$ppn" -np "$np" --map-by ppr:"$ppn":node --bind-to none \
    --mca plm_rsh_agent "$root/tests/hosts/rsh" --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
    --mca pml ob1 --mca btl tcp,vader,self env -u NETNS_HOSTS_DIR "$@"
}
gloo() {  # np ppn
  local np=$1 ppn=$2 r port=$((29500 + RANDOM % 1000))
  for ((r = 1; r < np; r++)); do
    host_exec "h$((r / ppn + 1))" env -u NETNS_HOSTS_DIR "$torch_py" "$here/hosts_gloo.py" $r "$np" "$h1" $port "$COLL" "$BYTES" > /dev/null 2>&1 &
  done
  host_exec h1 env -u NETNS_HOSTS_DIR timeout 900 "$torch_py" "$here/hosts_gloo.py" 0 "$np" "$h1" $port "$COLL" "$BYTES" 2>/dev/null
  wait
}
for rate in $RATES; do
  hosts_link rate="$rate"
  for ppn in 1 2; do
    np=$((2 * ppn))
    for ((round = 1; round <= ROUNDS; round++)); do
      modes="none bf16 fp8 int8"
      [ -n "${WHOLE:-}" ] && modes="$modes bf16-whole fp8-whole int8-whole"
      for mode in $modes; do
        piece=262144
        [ "${mode%-whole}" != "$mode" ] && piece=$BYTES
        mpirun_ $np $ppn env "$knob=${mode%-whole}" TESSERA_COMPRESS_PIECE=$piece "$build/bin/tessera-perf" "$COLL" \
          -b "$BYTES" -e "$BYTES" -n 3 -w 1 --json 2>/dev/null |
          $py -c 'import json,sys; d=json.load(sys.stdin); r=d["results"][0]
print(json.dumps({"lib":"tessera-"+sys.argv[1],"rate":sys.argv[2],"ppn":int(sys.argv[3]),"round":int(sys.argv[4]),"time_us":r["time_us"],"algo":r["algo"],"predicted_us":r["predicted_us"]}))' \
            "$mode" "$rate" "$ppn" "$round" | while read -r l; do emit "$l"; done
      done
      COLL_MPI_ITERS=3 mpirun_ $np $ppn "$out/coll_mpi" "$COLL" "$BYTES" 2>/dev/null |
        $py -c 'import json,sys; [print(json.dumps(dict(json.loads(l), lib="openmpi", rate=sys.argv[1], ppn=int(sys.argv[2]), round=int(sys.argv[3])))) for l in sys.stdin if l.strip()]' \
          "$rate" "$ppn" "$round" | while read -r l; do emit "$l"; done
      gloo $np $ppn | $py -c 'import json,sys; [print(json.dumps(dict(json.loads(l), lib="gloo", rate=sys.argv[1], ppn=int(sys.argv[2]), round=int(sys.argv[3])))) for l in sys.stdin if l.strip()]' \
          "$rate" "$ppn" "$round" | while read -r l; do emit "$l"; done
    done
  done
  hosts_link rate=off
done
$py - "$res" "$BYTES" "$COLL" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
nbytes, coll = int(sys.argv[2]), sys.argv[3]
keys = sorted({(r["rate"], r["ppn"]) for r in rows})
for rate, ppn in keys:
    med = {}
    for lib in ["tessera-none", "tessera-bf16", "tessera-fp8", "tessera-int8", "tessera-bf16-whole",
                "tessera-fp8-whole", "tessera-int8-whole", "openmpi", "gloo"]:
        t = [r["time_us"] for r in rows if r["rate"] == rate and r["ppn"] == ppn and r["lib"] == lib]
        if t: med[lib] = statistics.median(t)
    what = "sum allreduce" if coll == "allreduce" else "allgather"
    print(f"link {rate}, 2 hosts x {ppn} PE(s), {nbytes} B float32 {what}, medians:")
    for lib, t in med.items():
        print(f"  {lib:13s} {t / 1e3:9.1f} ms  {nbytes / t:7.1f} MB/s")
    base = med.get("tessera-none")
    if base:
        for lib in ["tessera-bf16", "tessera-fp8", "tessera-int8", "tessera-bf16-whole", "tessera-fp8-whole",
                    "tessera-int8-whole"]:
            if lib in med: print(f"  {lib} effective bandwidth / uncompressed: {base / med[lib]:.2f}x")
        for peer in ["openmpi", "gloo"]:
            if peer in med: print(f"  uncompressed speed / {peer}: {med[peer] / base:.2f}x")
PY
