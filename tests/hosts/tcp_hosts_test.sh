#!/usr/bin/env bash
# The TCP rendezvous across namespace hosts (TESSERA_BOOTSTRAP=tcp://h1-address:PORT), PEs started as plain
# processes inside each host as a user's own launcher would start them:
#   1. 2 hosts x 2 PEs: the RMA, collective and OpenSHMEM collective tests pass, the PEs of each host share
#      memory and reach the other host through UCX (the log's transport line), and h1's link carries bytes;
#   2. a process on h2 with the wrong secret is refused, logged with its address on h2, and the job completes;
#   3. kill -9 of a PE on h2 in a barrier loop ends every other PE on both hosts, non-zero, within 5 s, and
#      rank 0 names the PE; afterwards no PE runs and no host's /dev/shm holds a Tessera object;
#   4. the whole host h2 disappears (everything in its namespaces killed): h1's PEs end within 5 s.
# Skips (77) unless run as root.
#   bash tests/hosts/tcp_hosts_test.sh BUILD_DIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
. "$here/netns.sh"
. "$here/../scripts/procs.sh"
hosts_require_root
trap hosts_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_up 2 || exit 1
tmp=$(mktemp -d)
trap 'hosts_down; rm -rf "$tmp"' EXIT
h1=$(cat "$NETNS_HOSTS_DIR/h1.addr")
h2=$(cat "$NETNS_HOSTS_DIR/h2.addr")
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
fails=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
port=$((20000 + RANDOM % 20000))

# pe HOST OUT RANK SIZE SECRET PROGRAM ARGS...: one PE in the background on HOST (its pid in $!).
pe() {
  local host=$1 out=$2 rank=$3 size=$4 sec=$5
  shift 5
  host_exec "$host" env -u NETNS_HOSTS_DIR TESSERA_BOOTSTRAP="tcp://$h1:$port" TESSERA_RANK="$rank" \
    TESSERA_SIZE="$size" TESSERA_JOB_SECRET="$sec" TESSERA_TIMEOUT=60 "$@" > "$out" 2>&1 &
}
# job NAME PROGRAM ARGS...: 4 PEs, 0-1 on h1, 2-3 on h2; statuses in rcs[].
job() {
  local name=$1
  shift
  port=$((port + 1))
  local pids=()
  for r in 0 1 2 3; do
    pe "h$((r / 2 + 1))" "$tmp/$name.$r" $r 4 "$secret" env TESSERA_LOG=2 "$@"
    pids+=($!)
  done
  wait_all 240 "${pids[@]}"
}
shm_clean() { for h in h1 h2; do host_exec $h sh -c 'ls /dev/shm | grep -q tessera' && return 1; done; return 0; }
tx() { host_exec h1 awk '$1 == "eth0:" { print $10 }' /proc/net/dev; }

# 1. Test programs.
before=$(tx)
for prog in pe_pgas_rma pe_coll_hosts pe_shmem_coll; do
  job $prog "$build/bin/$prog" --gtest_brief=1
  check "$prog passes on 2 hosts x 2 PEs (statuses ${rcs[*]})" '[ "${rcs[*]}" = "0 0 0 0" ]'
  # A failed job shows what each PE said (the output goes with $tmp).
  [ "${rcs[*]}" = "0 0 0 0" ] || for r in 0 1 2 3; do echo "--- $prog, PE $r:"; tail -n 20 "$tmp/$prog.$r"; done
done
check "PE 0 shares memory with PE 1 and reaches PEs 2-3 through UCX" \
  'grep -q "transports (PE 0.s view): self for PE 0; shm for PE 1; ucx for PEs 2-3" "$tmp/pe_pgas_rma.0"'
check "the log counts 2 hosts" 'grep -q "4 PEs on 2 hosts" "$tmp/pe_pgas_rma.0"'
after=$(tx)
check "h1's eth0 carried the traffic ($((after - before)) bytes)" '[ $((after - before)) -gt 1000000 ]'
check "nothing left in any host's /dev/shm" shm_clean

# 2. A wrong secret from h2 during start-up.
port=$((port + 1))
pids=()
for r in 0 1 2 3; do
  pe "h$((r / 2 + 1))" "$tmp/good.$r" $r 4 "$secret" "$build/bin/pe_pgas_rma" --gtest_brief=1
  pids+=($!)
  [ $r -eq 0 ] && { sleep 0.3; pe h2 "$tmp/intruder" 3 4 "$(echo "$secret" | tr 0-9a-f 1-9a-f0)" "$build/bin/pe_pgas_rma"; intruder=$!; sleep 0.3; }
done
wait_all 120 "${pids[@]}"
check "the job completes beside the intruder (statuses ${rcs[*]})" '[ "${rcs[*]}" = "0 0 0 0" ]'
check "rank 0 logged the refusal with the intruder's address on h2" \
  'grep -q "refused a connection from $h2:[0-9]*: wrong job secret" "$tmp/good.0"'
wait_all 10 "$intruder"
check "the intruder did not join (status ${rcs[0]})" '[ "${rcs[0]}" -ne 0 ]'

# 3. kill -9 of PE 2 (on h2) in a barrier loop (barrier_loop.c: PE 2 writes its pid to the file named).
port=$((port + 1))
pids=()
for r in 0 1 2 3; do
  pe "h$((r / 2 + 1))" "$tmp/loop.$r" $r 4 "$secret" "$build/bin/pe_barrier_loop" "$tmp/pe2.pid"
  pids+=($!)
done
for _ in $(seq 200); do [ -s "$tmp/pe2.pid" ] && break; sleep 0.05; done
sleep 0.5
start=$(date +%s%N)
kill -9 "$(cat "$tmp/pe2.pid")"
wait_all 10 "${pids[0]}" "${pids[1]}" "${pids[3]}"
elapsed=$((($(date +%s%N) - start) / 1000000))
check "every other PE ends non-zero (statuses ${rcs[*]}) within 5 s (${elapsed} ms)" \
  '[ "${rcs[0]}" -ne 0 ] && [ "${rcs[1]}" -ne 0 ] && [ "${rcs[2]}" -ne 0 ] && [ $elapsed -lt 5000 ]'
check "rank 0 names the dead PE" 'grep -q "PE 2 (host $h2[:0-9]*) lost its bootstrap connection" "$tmp/loop.0" || { cat "$tmp"/loop.*; false; }'
wait_all 5 "${pids[2]}"
check "no PE left on any host" '! pgrep -f "pe_barrier_loop $tmp/pe2.pid" >/dev/null'
check "nothing left in any host's /dev/shm" shm_clean

# 4. Host h2 disappears: every process in its namespaces killed, its link down.
port=$((port + 1))
pids=()
for r in 0 1 2 3; do
  pe "h$((r / 2 + 1))" "$tmp/gone.$r" $r 4 "$secret" "$build/bin/pe_barrier_loop"
  pids+=($!)
done
sleep 2
holder=$(cat "$NETNS_HOSTS_DIR/h2.pid")
start=$(date +%s%N)
for p in $(host_pids h2); do [ "$p" != "$holder" ] && kill -9 "$p" 2>/dev/null; done
host_exec h2 ip link set eth0 down
wait_all 10 "${pids[0]}" "${pids[1]}"
elapsed=$((($(date +%s%N) - start) / 1000000))
check "h1's PEs end non-zero (statuses ${rcs[*]}) within 5 s (${elapsed} ms) when h2 goes away" \
  '[ "${rcs[0]}" -ne 0 ] && [ "${rcs[0]}" -ne 137 ] && [ "${rcs[1]}" -ne 0 ] && [ "${rcs[1]}" -ne 137 ] && [ $elapsed -lt 5000 ]'
wait_all 5 "${pids[2]}" "${pids[3]}"
check "nothing left in h1's /dev/shm" '! host_exec h1 sh -c "ls /dev/shm | grep -q tessera"'

[ $fails -eq 0 ] && echo "ok: the TCP rendezvous across 2 namespace hosts"
exit $((fails > 0))
