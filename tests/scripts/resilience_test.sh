#!/usr/bin/env bash
# Resilient mode (docs/resilience.md): under tessera-run --on-failure continue (or TESSERA_RESILIENT=1) a PE
# killed in the middle of a loop of allreduces leaves the others running. Each survivor's call fails naming
# it, a communicator without it goes on, the survivors agree, shrink, revoke and shrink again, and finalize
# (and the same for OpenSHMEM teams: SHMEMX_PEER_FAILED, shmemx_team_shrink); tessera-soak --kill runs its
# communicator mix through deaths drawn from its seed;
# the job exits 0, the launcher names the PE, and nothing is left in /dev/shm. Without the mode, the same
# death ends the job as before.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
prog="$build/bin/pe_resilient"
. "$(dirname "$0")/lib.sh"

# Runs tessera-run -n 4 --on-failure continue ARGS into $tmp/out (printed), setting rc and elapsed_ms.
timed_job() {
  local start
  start=$(date +%s%N)
  "$run" -n 4 --on-failure continue "$@" > "$tmp/out" 2>&1
  rc=$?
  elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  cat "$tmp/out"
}

# 1-3. A PE killed: the middle one, the first, the last; 4 PEs on this machine's CPUs (oversubscribed here).
for victim in 2 0 3; do
  if [ $victim = 0 ]; then
    TESSERA_RESILIENT=1 "$run" -n 4 --timeout 120 --env TESSERA_TIMEOUT=30 "$prog" $victim > "$tmp/out" 2>&1
  else
    "$run" -n 4 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=30 "$prog" $victim > "$tmp/out" 2>&1
  fi
  rc=$?
  cat "$tmp/out"
  check "victim $victim: the job exits 0 ($rc)" "[ $rc -eq 0 ]"
  check "victim $victim: three survivors passed" "[ \$(grep -c '^resilient: ok PE' '$tmp/out') -eq 3 ]"
  check "victim $victim: the launcher names it and goes on" \
    "grep -q 'tessera-run: PE $victim killed by signal 9 (SIGKILL); the job continues on 3 PEs' '$tmp/out'"
  check "victim $victim: the launcher's summary" "grep -q 'the job went on without PE $victim,' '$tmp/out'"
  check "victim $victim: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
  check "victim $victim: no PE process left" "! pgrep -f '$prog' >/dev/null"
done

# 3a. The same through the C++ API: PeerFailure from a blocking call and from a comm stream, failed(),
# agree, shrink, revoke.
"$run" -n 4 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=30 "$build/bin/pe_resilient_cxx" > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "C++ API: exit 0 and three survivors passed ($rc)" \
  "[ $rc -eq 0 ] && [ \$(grep -c '^resilient_cxx: ok PE' '$tmp/out') -eq 3 ]"

# 3a'. OpenSHMEM teams: a team collective returns SHMEMX_PEER_FAILED naming the PE, the survivors shrink
# the team (shmemx_team_shrink; the middle victim leaves members no stride describes) and use it.
for victim in 1 3 -1; do
  "$run" -n 4 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=30 "$build/bin/pe_resilient_teams" $victim \
    > "$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  want=3
  [ $victim -lt 0 ] && want=4
  check "teams, victim $victim: exit 0 and $want PEs passed ($rc)" \
    "[ $rc -eq 0 ] && [ \$(grep -c '^resilient_teams: ok PE' '$tmp/out') -eq $want ]"
  check "teams, victim $victim: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done

# 3b. A PE stopped (SIGSTOP): the launcher kills it at half of TESSERA_TIMEOUT (2 s here), and the others'
# calls fail then, within the deadline of their waits (4 s).
"$run" -n 4 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=4 "$prog" 1 stop > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "stopped PE: the job exits 0 ($rc)" "[ $rc -eq 0 ] && [ \$(grep -c '^resilient: ok PE' '$tmp/out') -eq 3 ]"
check "stopped PE: the launcher says why it killed it" \
  "grep -q 'tessera-run: PE 1 stayed stopped for 2.0 s (half of TESSERA_TIMEOUT) and was killed; the job continues on 3 PEs' '$tmp/out'"
check "stopped PE: every survivor saw the failure within TESSERA_TIMEOUT + 50 ms of the stop" \
  "sed -n 's/.*failure seen \([0-9.]*\) ms.*/\1/p' '$tmp/out' | awk '\$1 < 1900 || \$1 > 4050 {bad=1} END {exit bad || NR != 3}'"
check "stopped PE: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 3c. Fault trials: a PE killed or stopped at a random moment of a loop of mixed collectives
# (bench/resilience_trials.sh runs 200 of them): no hang, no wrong result, nothing left.
TRIALS=6 STOP_EVERY=3 bash "$(dirname "$0")/../../bench/resilience_trials.sh" "$build" > "$tmp/trials" 2>&1
rc=$?
cat "$tmp/trials"
check "6 fault trials: no hang, no wrong result, nothing left ($rc)" "[ $rc -eq 0 ] && grep -q ', 0 hangs, 0 bad' '$tmp/trials'"
# ... and through OpenSHMEM team calls (SHMEMX_PEER_FAILED, shmemx_team_shrink).
API=shmem TRIALS=4 STOP_EVERY=2 bash "$(dirname "$0")/../../bench/resilience_trials.sh" "$build" > "$tmp/trials" 2>&1
rc=$?
cat "$tmp/trials"
check "4 fault trials on OpenSHMEM teams: no hang, no wrong result, nothing left ($rc)" \
  "[ $rc -eq 0 ] && grep -q ', 0 hangs, 0 bad' '$tmp/trials'"

# 3c'. A second PE dies inside the survivors' shrink (test hook TESSERA_TEST_DIE_IN_SHRINK=3:STEP): before the
# shrink's first barrier (1), before its second (2), or just after posting the second (3: the others make
# the new communicator with it, and its first call fails). The survivors must end the shrink alike, shrink
# again, and finish on the 3 left; a deadline (TESSERA_TIMEOUT=20) ends the job instead if they disagree.
for step in 1 2 3; do
  rm -f "$tmp"/ready.*
  "$run" -n 5 --on-failure continue --timeout 120 --env TESSERA_TIMEOUT=20 --env TESSERA_TEST_DIE_IN_SHRINK=3:$step \
    "$build/bin/pe_resilient_mix" 1.5 "$tmp/ready" > "$tmp/out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 500); do [ "$(ls "$tmp"/ready.* 2>/dev/null | wc -l)" -eq 5 ] && break; sleep 0.01; done
  sleep 0.2
  kill -KILL "$(cat "$tmp/ready.1")"
  wait $launcher
  rc=$?
  cat "$tmp/out"
  check "second death in the shrink (step $step): exit 0 and 3 survivors passed ($rc)" \
    "[ $rc -eq 0 ] && [ \$(grep -c '^mix: ok PE' '$tmp/out') -eq 3 ]"
  check "second death in the shrink (step $step): the launcher names both" \
    "grep -q 'PE 1 killed by signal 9' '$tmp/out' && grep -q 'PE 3 killed by signal 9' '$tmp/out'"
  check "second death in the shrink (step $step): nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done

# 3d. An OpenSHMEM barrier over the world after the death has no error to return: the job ends at once
# (not at TESSERA_TIMEOUT, 60 s here), naming the failed PE.
timed_job --timeout 120 --env TESSERA_TIMEOUT=60 "$prog" 2 barrier
check "world barrier after a death: the job ends non-zero within 10 s (rc $rc, ${elapsed_ms} ms)" \
  "[ $rc -ne 0 ] && [ $elapsed_ms -lt 10000 ]"
check "world barrier after a death: says why, naming PE 2" \
  "grep -q 'a barrier of the world team (4 PEs): PE 2 failed (resilient mode)' '$tmp/out'"
check "world barrier after a death: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 3e. A point-to-point wait for a write the dead PE was to make (shmem_wait_until) belongs to no call that
# could fail: it ends the job at its deadline (TESSERA_TIMEOUT, 2 s here), and its message names the failed PE.
timed_job --timeout 60 --env TESSERA_TIMEOUT=2 "$prog" 2 wait
check "wait after a death: the job ends non-zero within TESSERA_TIMEOUT + 3 s (rc $rc, ${elapsed_ms} ms)" \
  "[ $rc -ne 0 ] && [ $elapsed_ms -lt 5000 ]"
check "wait after a death: the deadline's message names the failed PE" \
  "grep -q 'timed out after .*resilient mode: PE 2 failed earlier' '$tmp/out'"
check "wait after a death: the hang report shows PE 2 as failed" \
  "grep -q 'PE 2: failed (resilient mode: the job went on without it' '$tmp/out'"
check "wait after a death: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 4. Resilient mode and nobody dies: the same program passes on every PE.
"$run" -n 3 --on-failure continue --timeout 60 "$prog" -1 > "$tmp/out" 2>&1
rc=$?
check "no failure: exit 0 ($rc)" "[ $rc -eq 0 ] && [ \$(grep -c '^resilient: ok PE .* (no failure)' '$tmp/out') -eq 3 ]"

# 5. Without resilient mode the death ends the job, as it always has.
"$run" -n 4 --timeout 60 "$prog" 2 > "$tmp/out" 2>&1
rc=$?
check "default mode: exit non-zero ($rc)" "[ $rc -ne 0 ]"
check "default mode: the job ends naming the PE" \
  "grep -q 'tessera-run: PE 2 killed by signal 9 (SIGKILL); ending the job' '$tmp/out'"
check "default mode: nobody passed" "! grep -q '^resilient: ok' '$tmp/out'"
check "default mode: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 6. Bad values are named.
"$run" -n 2 --on-failure maybe true > "$tmp/out" 2>&1
rc=$?
check "--on-failure maybe is refused ($rc)" "[ $rc -ne 0 ] && grep -q 'on-failure' '$tmp/out'"
TESSERA_RESILIENT=maybe "$run" -n 2 true > "$tmp/out" 2>&1
rc=$?
check "TESSERA_RESILIENT=maybe is refused naming it ($rc)" "[ $rc -ne 0 ] && grep -q 'TESSERA_RESILIENT' '$tmp/out' && grep -q maybe '$tmp/out'"
"$run" --hosts a,b --env TESSERA_RESILIENT=maybe true > "$tmp/out" 2>&1
rc=$?
check "TESSERA_RESILIENT=maybe across hosts is refused naming it ($rc)" \
  "[ $rc -ne 0 ] && grep -q 'TESSERA_RESILIENT' '$tmp/out' && grep -q maybe '$tmp/out'"

# 7. The soak in resilient mode (tools/soak/resilient.cc): PEs drawn from the seed die inside steps of the
# communicator mix; the survivors revoke, agree, shrink, run the step again and verify every result.
soak="$build/bin/tessera-soak"
# With --stop the victims stop (SIGSTOP) and the launcher kills them after half of TESSERA_TIMEOUT.
for spec in "4 1 20261204 kill" "5 2 31 kill" "5 2 8 stop"; do
  set -- $spec
  name="soak -n $1 --kill $2 ($4)"
  flags=() timeout=30 said='killed by signal 9 (SIGKILL); the job continues'
  [ "$4" = stop ] && flags=(--stop) timeout=4 said='stayed stopped for 2.0 s (half of TESSERA_TIMEOUT) and was killed; the job continues'
  "$run" -n "$1" --on-failure continue --timeout 200 --env TESSERA_TIMEOUT=$timeout "$soak" --kill "$2" "${flags[@]}" \
    --seed "$3" --ops 300 > "$tmp/out" 2>&1
  rc=$?
  grep -v '^\[PE' "$tmp/out"
  check "$name: exit 0 ($rc)" "[ $rc -eq 0 ]"
  check "$name: $2 died, the others shrank and went on" \
    "grep -q 'resilient mode: $2 of $1 PEs died, [1-9][0-9]* shrinks' '$tmp/out'"
  check "$name: results verified, none wrong" "grep -Eq 'verified operations: [1-9][0-9]*, wrong results: 0$' '$tmp/out'"
  check "$name: the launcher names each victim" "[ \$(grep -c '$said' '$tmp/out') -eq $2 ]"
  check "$name: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done
"$run" -n 4 --on-failure continue --timeout 60 "$soak" --kill 3 > "$tmp/out" 2>&1
rc=$?
check "soak --kill 3 on 4 PEs is refused naming the limit ($rc)" "[ $rc -ne 0 ] && grep -q 'at most 2 (two must survive)' '$tmp/out'"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
