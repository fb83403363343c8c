#!/usr/bin/env bash
# Resilient mode across namespace hosts (tessera-run --hosts ... --on-failure continue; docs/resilience.md,
# "Across hosts"): each host's agent owns its control segment, marks the failures the launcher numbers, and
# copies its PEs' agreement records to the other hosts.
#  (a) pe_resilient on h1:2,h2:2 with the victim on the other host than PE 0 (2), on PE 0's host (1), PE 0
#      itself (the TCP rendezvous's rank 0), and PE 1 stopped (its agent kills it at half of TESSERA_TIMEOUT);
#  (b) the C++ API; (c) a whole host lost (its agent killed: its PEs die with it) during a loop of checked
#      collectives, and a host whose link goes down (its agent's channel up): the agents' heartbeats stop,
#      and the launcher fences it; (d) the soak's communicator mix with deaths and stops drawn from its seed.
# Every job exits 0 with the survivors' "ok", the launcher names each failure with its host, and nothing is
# left on any host. Usage: resilient_hosts_test.sh [BUILD_DIR]. Skips (77) unless run as root.
# shellcheck disable=SC2016  # check expressions are single-quoted on purpose
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
bin=$build/bin
run=$bin/tessera-run
# shellcheck source=netns.sh disable=SC1091
. "$here/netns.sh"
hosts_require_root
for b in tessera-run tessera-soak pe_resilient pe_resilient_cxx pe_resilient_mix; do
  [ -x "$bin/$b" ] || { echo "FAIL $bin/$b is not built"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-resilient-hosts.XXXXXX")
trap 'hosts_down; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fails=0 passes=0
check() { if eval "$2"; then passes=$((passes+1)); echo "ok   $1"; else fails=$((fails+1)); echo "FAIL $1"; fi; }
export TESSERA_RSH=$here/rsh

# job NAME ARGS...: tessera-run --on-failure continue ARGS under a deadline, output in $work/NAME; sets rc.
job() {
  local name=$1; shift
  timeout 150 "$run" --on-failure continue --timeout 120 "$@" > "$work/$name" 2>&1
  rc=$?
  grep -v '^\[PE' "$work/$name"
}

hosts_up 3 || { echo "FAIL hosts_up 3"; exit 1; }

# (a) One PE killed, on either host or the rendezvous's rank 0; one stopped.
for spec in "2 h2 kill" "1 h1 kill" "0 h1 kill" "1 h1 stop"; do
  set -- $spec
  timeout=20 args=("$1") said="PE $1 on host $2 killed by signal 9 (SIGKILL); the job continues on 3 PEs"
  [ "$3" = stop ] && timeout=4 args=("$1" stop) \
    said="PE $1 on host $2 stayed stopped for 2.0 s (half of TESSERA_TIMEOUT) and was killed; the job continues on 3 PEs"
  job "victim$1$3" --hosts h1:2,h2:2 --env TESSERA_TIMEOUT=$timeout "$bin/pe_resilient" "${args[@]}"
  check "victim $1 ($3): the job exits 0 ($rc)" "[ $rc -eq 0 ]"
  check "victim $1 ($3): three survivors passed" "[ \$(grep -c '^resilient: ok PE' '$work/victim$1$3') -eq 3 ]"
  check "victim $1 ($3): the launcher names it and its host, and goes on" "grep -qF '$said' '$work/victim$1$3'"
  check "victim $1 ($3): the launcher's summary" "grep -q 'the job went on without PE $1, and its other PEs ended normally' '$work/victim$1$3'"
  check "victim $1 ($3): nothing left on any host" 'hosts_clean_within 5'
done

# (b) The C++ API (its receive from any source left out: it needs every member on one host).
job cxx --hosts h1:2,h2:2 --env TESSERA_TIMEOUT=20 "$bin/pe_resilient_cxx" hosts
check "C++ API: exit 0 and three survivors passed ($rc)" \
  "[ $rc -eq 0 ] && [ \$(grep -c '^resilient_cxx: ok PE' '$work/cxx') -eq 3 ]"

# (c) A whole host lost: h2's agent killed mid-loop; its PEs die with it (PDEATHSIG) and the two on h1 go on.
rm -f "$work"/ready.*
timeout 150 "$run" --on-failure continue --timeout 120 --hosts h1:2,h2:2 --env TESSERA_TIMEOUT=20 \
  "$bin/pe_resilient_mix" 2 "$work/ready" > "$work/lost" 2>&1 &
launcher=$!
for _ in $(seq 1 500); do [ "$(ls "$work"/ready.* 2>/dev/null | wc -l)" -eq 4 ] && break; sleep 0.01; done
sleep 0.3
agent=$(for p in $(host_members h2); do [ "$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)" = "$run --agent " ] && echo "$p"; done)
kill -KILL $agent
wait $launcher
rc=$?
cat "$work/lost"
check "host lost: exit 0 and the two survivors passed ($rc)" "[ $rc -eq 0 ] && [ \$(grep -c '^mix: ok PE' '$work/lost') -eq 2 ]"
check "host lost: the launcher names both of its PEs" \
  "grep -q 'PE 2 on host h2 was lost with its host' '$work/lost' && grep -q 'PE 3 on host h2 was lost with its host' '$work/lost'"
check "host lost: nothing left on any host" 'hosts_clean_within 5'

# (c') A link down: h2's port of the switch goes down mid-loop while its agent's channel (the remote shell)
# stays up. The agents stop hearing each other, the launcher fences h2 (of two hosts that lost each other,
# the one without PE 0), its PEs are killed and marked failed, and the two on h1 go on.
rm -f "$work"/ready.*
timeout 150 "$run" --on-failure continue --timeout 120 --hosts h1:2,h2:2 --env TESSERA_TIMEOUT=8 \
  "$bin/pe_resilient_mix" 3 "$work/ready" > "$work/link" 2>&1 &
launcher=$!
for _ in $(seq 1 500); do [ "$(ls "$work"/ready.* 2>/dev/null | wc -l)" -eq 4 ] && break; sleep 0.01; done
sleep 0.3
cut_ns=$(date +%s%N)
nsenter -t "$(cat "$NETNS_HOSTS_DIR/switch.pid")" --net ip link set veth-h2 down
wait $launcher
rc=$?
nsenter -t "$(cat "$NETNS_HOSTS_DIR/switch.pid")" --net ip link set veth-h2 up
cat "$work/link"
detect_ms=$(awk -v k="$cut_ns" '/^mix: ok PE/ { for (i = 1; i < NF; ++i) if ($i == "recover_ns") print int(($(i+1) - k) / 1e6) }' "$work/link" | sort -n | tail -1)
check "link down: exit 0 and the two survivors on h1 passed ($rc)" "[ $rc -eq 0 ] && [ \$(grep -c '^mix: ok PE' '$work/link') -eq 2 ]"
check "link down: the launcher fences h2 and names its PEs" \
  "grep -q 'host h2 lost its link to the other hosts (no heartbeat): fencing it' '$work/link' && [ \$(grep -c 'on host h2 was killed: its host was fenced' '$work/link') -eq 2 ]"
check "link down: the survivors' first good call within TESSERA_TIMEOUT of the cut (${detect_ms:-none} ms)" \
  "[ -n '$detect_ms' ] && [ '$detect_ms' -lt 8000 ]"
check "link down: nothing left on any host" 'hosts_clean_within 5'

# (d) The soak: two deaths on three hosts (PE 0's among the draws of one seed), and a stop.
for spec in "h1:2,h2:2,h3:1 2 31 kill" "h1:2,h2:2,h3:1 2 20261204 kill" "h1:2,h2:2 1 8 stop"; do
  set -- $spec
  flags=() timeout=20
  [ "$4" = stop ] && flags=(--stop) timeout=4
  job "soak$3" --hosts "$1" --env TESSERA_TIMEOUT=$timeout "$bin/tessera-soak" --kill "$2" "${flags[@]}" --seed "$3" --ops 300
  check "soak --seed $3 --kill $2 ($4) on $1: exit 0 ($rc)" "[ $rc -eq 0 ]"
  check "soak --seed $3: $2 died, the others shrank and went on" "grep -q 'resilient mode: $2 of [0-9]* PEs died' '$work/soak$3'"
  check "soak --seed $3: results verified, none wrong" \
    "grep -Eq 'verified operations: [1-9][0-9]*, wrong results: 0$' '$work/soak$3'"
  check "soak --seed $3: nothing left on any host" 'hosts_clean_within 5'
done

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
