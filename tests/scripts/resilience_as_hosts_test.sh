#!/usr/bin/env bash
# Resilient mode on communicators that span hosts (docs/resilience.md, "Across hosts"), under the one-host
# launcher with tests/pe/as_hosts.sh: the PEs take host identities ("h0", "h1", ...), so the world and the
# communicators the survivors shrink to are two-level (shared memory inside each "host", messages over TCP
# between them), while the launcher's control segment is the one every PE maps. A PE killed or stopped on
# either side, including PE 0, leaves the others running: their calls fail naming it, a communicator without
# it goes on, they agree, shrink, revoke and shrink again, and a PE that dies inside the shrink makes it
# fail alike on every survivor. tessera-soak --kill runs its communicator mix through deaths drawn from its
# seed. Every job exits 0, the launcher names each victim, and nothing is left in /dev/shm.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
as_hosts="$(dirname "$0")/../pe/as_hosts.sh"
. "$(dirname "$0")/lib.sh"

# 1. pe_resilient across 2 "hosts" of 2 PEs: the victim on the other host than PE 0 (2), on PE 0's (1),
# PE 0 itself, and PE 1 stopped (the launcher kills it after half of TESSERA_TIMEOUT).
for spec in "2 kill" "1 kill" "0 kill" "1 stop"; do
  set -- $spec
  timeout=30 args=("$1") said="PE $1 killed by signal 9 (SIGKILL); the job continues on 3 PEs"
  [ "$2" = stop ] && timeout=4 args=("$1" stop) said="PE $1 stayed stopped"
  "$run" -n 4 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=$timeout --env TEST_PES_PER_HOST=2 \
    "$as_hosts" "$build/bin/pe_resilient" "${args[@]}" > "$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  check "2x2, victim $1 ($2): the job exits 0 ($rc)" "[ $rc -eq 0 ]"
  check "2x2, victim $1 ($2): three survivors passed" "[ \$(grep -c '^resilient: ok PE' '$tmp/out') -eq 3 ]"
  check "2x2, victim $1 ($2): the launcher names it and goes on" "grep -q '$said' '$tmp/out'"
  check "2x2, victim $1 ($2): nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done

# 2. The C++ API: PeerFailure from a blocking call and from a comm stream, failed(), agree, shrink, revoke.
"$run" -n 4 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=30 --env TEST_PES_PER_HOST=2 \
  "$as_hosts" "$build/bin/pe_resilient_cxx" hosts > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "2x2, C++ API: exit 0 and three survivors passed ($rc)" \
  "[ $rc -eq 0 ] && [ \$(grep -c '^resilient_cxx: ok PE' '$tmp/out') -eq 3 ]"

# 3. A second death inside the shrink (TESSERA_TEST_DIE_IN_SHRINK=3:STEP: PE 3 dies before the shrink's
# first or second barrier, or just after the second), 5 PEs on hosts of 2, 2 and 1: the survivors end the
# shrink alike, shrink again and finish on the 3 left.
for step in 1 2 3; do
  rm -f "$tmp"/ready.*
  "$run" -n 5 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=20 --env TESSERA_TEST_DIE_IN_SHRINK=3:$step \
    --env TEST_PES_PER_HOST=2 "$as_hosts" "$build/bin/pe_resilient_mix" 1.5 "$tmp/ready" > "$tmp/out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 500); do [ "$(ls "$tmp"/ready.* 2>/dev/null | wc -l)" -eq 5 ] && break; sleep 0.01; done
  sleep 0.2
  kill -KILL "$(cat "$tmp/ready.1")"
  wait $launcher
  rc=$?
  cat "$tmp/out"
  check "hosts of 2: second death in the shrink (step $step): exit 0 and 3 survivors passed ($rc)" \
    "[ $rc -eq 0 ] && [ \$(grep -c '^mix: ok PE' '$tmp/out') -eq 3 ]"
  check "hosts of 2: second death in the shrink (step $step): nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done

# 4. The soak's communicator mix (its receive from any source becomes a collective across hosts).
soak="$build/bin/tessera-soak"
for spec in "4 1 2 20261204 kill" "5 2 2 31 kill" "6 2 3 104 kill" "5 2 2 8 stop"; do
  set -- $spec
  name="soak -n $1 --kill $2, hosts of $3 ($5)"
  flags=() timeout=30
  [ "$5" = stop ] && flags=(--stop) timeout=4
  "$run" -n "$1" --on-failure continue --timeout 200 --env TESSERA_TIMEOUT=$timeout --env TEST_PES_PER_HOST=$3 \
    "$as_hosts" "$soak" --kill "$2" "${flags[@]}" --seed "$4" --ops 300 > "$tmp/out" 2>&1
  rc=$?
  grep -v '^\[PE' "$tmp/out"
  check "$name: exit 0 ($rc)" "[ $rc -eq 0 ]"
  check "$name: $2 died, the others shrank and went on" \
    "grep -q 'resilient mode: $2 of $1 PEs died, [1-9][0-9]* shrinks' '$tmp/out'"
  check "$name: results verified, none wrong" "grep -Eq 'verified operations: [1-9][0-9]*, wrong results: 0$' '$tmp/out'"
  check "$name: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
