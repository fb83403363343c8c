#!/usr/bin/env bash
# Growing back (docs/resilience.md, "Growing back"): under tessera-run --on-failure continue --restarts N a
# PE killed mid-training is replaced by a new process under its number. The survivors shrink, train on 3,
# then grow; the replacement joins, pulls the model by one-sided gets and trains on with them, and every PE
# checks the model to the bit (tests/pe/grow.c); and the same through the C++ API (grow_cxx.cc). Also: the
# leader's own PE replaced, two deaths in a row, a survivor killed inside the grow (which then fails on every
# member alike), a replacement whose allocations differ (refused on every side), and the launcher's refusals.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
prog="$build/bin/pe_grow"
. "$(dirname "$0")/lib.sh"

# grows VICTIM KILLS RESTARTS [mismatch]: runs the job into $tmp/out (printed), setting rc.
grows() {
  local victim=$1 kills=$2 restarts=$3
  shift 3
  "$run" -n 4 --on-failure continue --restarts "$restarts" --timeout 120 --env TESSERA_TIMEOUT=30 \
    "$prog" "$victim" "$kills" "$@" > "$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
}

for victim in 2 0; do
  grows $victim 1 1
  check "victim $victim: the job exits 0 ($rc)" "[ $rc -eq 0 ]"
  check "victim $victim: the replacement and three survivors checked the model" \
    "[ \$(grep -c '^grow: ok PE' '$tmp/out') -eq 4 ] && grep -q '^grow: ok PE $victim incarnation 1 rank $victim\$' '$tmp/out'"
  check "victim $victim: the launcher started one replacement" \
    "grep -q 'tessera-run: started a replacement for PE $victim (incarnation 1; 0 more restarts allowed)' '$tmp/out'"
  check "victim $victim: the launcher's summary" \
    "grep -q 'the job went on without PE $victim (1 replacement started: --restarts), and its other PEs ended normally' '$tmp/out'"
  check "victim $victim: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
  check "victim $victim: no PE process left" "! pgrep -f '$prog' >/dev/null"
done

# Two deaths of PE 3: its first replacement dies too, and a second one joins.
grows 3 2 2
check "twice: the job exits 0 ($rc)" "[ $rc -eq 0 ]"
check "twice: incarnation 2 and three survivors checked the model" \
  "[ \$(grep -c '^grow: ok PE' '$tmp/out') -eq 4 ] && grep -q '^grow: ok PE 3 incarnation 2 rank 3\$' '$tmp/out'"
check "twice: each survivor timed both grows" \
  "[ \$(grep -cE '^grow: ok PE [0-2] survivor rank [0-2], death to first good call on the grown communicator: [0-9]+ ms [0-9]+ ms\$' '$tmp/out') -eq 3 ]"
check "twice: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# A survivor dies in the grow, before each of its three meetings: the grow fails on every member alike, the
# survivors shrink and grow again, and both replacements join (--restarts 2).
for step in 1 2 3; do
  "$run" -n 4 --on-failure continue --restarts 2 --timeout 120 --env TESSERA_TIMEOUT=30 \
    --env TESSERA_TEST_DIE_IN_GROW=3:$step "$prog" 2 1 > "$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  check "death in the grow (meeting $step): the job exits 0 ($rc)" "[ $rc -eq 0 ]"
  check "death in the grow (meeting $step): two replacements and two survivors checked the model" \
    "[ \$(grep -c '^grow: ok PE' '$tmp/out') -eq 4 ] && grep -q '^grow: ok PE 2 incarnation 1 rank 2\$' '$tmp/out' &&
     grep -q '^grow: ok PE 3 incarnation 1 rank 3\$' '$tmp/out'"
  check "death in the grow (meeting $step): both survivors grew again" \
    "[ \$(grep -c '^grow: PE [01] grows again after: tesseraCommGrow: PE 3 failed while the communicator was growing' '$tmp/out') -eq 2 ]"
  check "death in the grow (meeting $step): nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done

# A replacement that allocated differently: it refuses, and the survivors' grow fails naming it.
grows 1 1 1 mismatch
check "mismatch: the job exits 0 ($rc)" "[ $rc -eq 0 ]"
check "mismatch: the replacement names the cause" \
  "grep -q 'grow: ok PE 1 incarnation 1 refused to join: .*symmetric allocations differ from the survivors' '$tmp/out'"
check "mismatch: every survivor's grow fails naming it" \
  "[ \$(grep -c 'saw the grow refused: tesseraCommGrow: PE 1 could not take part in the grow' '$tmp/out') -eq 3 ]"
check "mismatch: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# The same through the C++ API: PeerFailure, Comm::shrink, Comm::grow, Comm::join.
"$run" -n 4 --on-failure continue --restarts 1 --timeout 120 --env TESSERA_TIMEOUT=30 "$build/bin/pe_grow_cxx" \
  > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "C++ API: exit 0, the replacement and three survivors passed ($rc)" \
  "[ $rc -eq 0 ] && [ \$(grep -c '^grow_cxx: ok PE' '$tmp/out') -eq 4 ] && grep -q '^grow_cxx: ok PE 1 incarnation 1\$' '$tmp/out'"

# The launcher's refusals.
"$run" -n 4 --restarts 1 "$prog" 2 1 > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "--restarts without --on-failure continue is refused ($rc)" \
  "[ $rc -ne 0 ] && grep -q 'tessera-run: --restarts 1: .*add --on-failure continue' '$tmp/out'"
"$run" --hosts a:2,b:2 --on-failure continue --restarts 1 "$prog" 2 1 > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "--restarts across hosts is refused ($rc)" "[ $rc -ne 0 ] && grep -q -- '--restarts 1 with --hosts' '$tmp/out'"
# tessera-run sets TESSERA_INCARNATION for each PE itself; a process started without it is refused.
TESSERA_INCARNATION=1 "$prog" 1 1 > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
check "a replacement without tessera-run is refused ($rc)" \
  "[ $rc -ne 0 ] && grep -q 'TESSERA_INCARNATION=1: this PE replaces a failed one, but only tessera-run starts replacements' '$tmp/out'"

echo "grow_test: $passes passed, $fails failed"
[ $fails -eq 0 ]
