#!/usr/bin/env bash
# The hang report: when a wait passes its deadline (TESSERA_TIMEOUT), tessera-run prints one report naming
# each PE's call and the PEs the others wait for; the job exits non-zero and leaves nothing in /dev/shm.
# The program is tests/pe/hang.c (its modes say who hangs where).
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
prog="$build/bin/pe_hang"
. "$(dirname "$0")/lib.sh"

# Runs mode $1 on 4 PEs with a one-second deadline; output in $tmp/$1, exit status in $tmp/$1.rc.
hang() {
  "$run" -n 4 -x TESSERA_TIMEOUT=1 --timeout 60 "$prog" "$1" > "$tmp/$1" 2>&1
  echo $? > "$tmp/$1.rc"
  echo "---- $1"
  cat "$tmp/$1"
}
has() { grep -q -e "$2" "$tmp/$1"; }
# The report's line for PE $2 (from the report, not the PEs' own messages).
line() { sed -n '/hang report:/,$p' "$tmp/$1" | grep -e "^  PE $2: "; }
common() {
  check "$1: exit status non-zero ($(cat "$tmp/$1.rc"))" "[ $(cat "$tmp/$1.rc") -ne 0 ]"
  check "$1: one report" "[ \$(grep -c 'tessera-run: hang report: the wait of PE [0-9] passed its deadline' '$tmp/$1') -eq 1 ]"
  check "$1: PE 3 is not in a Tessera call, last in the sum reduction (an allreduce)" \
    "line $1 3 | grep -q 'is not in a Tessera call (last: allreduce 4 B (world, call #1)'"
  check "$1: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
  check "$1: no PE process left" "! pgrep -f '$prog' >/dev/null"
}

# 1. PE 3 computes; the others wait for it in a barrier, a collective, a point-to-point wait.
hang barrier
common barrier
for pe in 0 1 2; do
  check "barrier: PE $pe is in shmem_barrier_all, waiting for PE 3" \
    "line barrier $pe | grep -q 'is in shmem_barrier_all (world, team sync [0-9]*) for [0-9.]* s; waits for PE 3\$'"
done
check "barrier: the first waiter says who has not arrived" "has barrier '        waiting for shmem_barrier_all #2 .*have not arrived: PE 3'"
check "barrier: the others refer to it" "[ \$(grep -c '        waiting for: as PE 0\$' '$tmp/barrier') -eq 2 ]"
check "barrier: earlier calls listed" "has barrier '        earlier: allreduce 4 B (world, call #1) [0-9.]* s ago, shmem_barrier_all'"
check "barrier: summary" "has barrier '  summary: PEs 0,1,2 wait for PE 3; PE 3 is not in a Tessera call (last: allreduce 4 B (world, call #1), [0-9.]* s ago)\$'"

hang reduce
common reduce
for pe in 0 1 2; do
  check "reduce: PE $pe is in the sum reduction #2, waiting for PE 3" \
    "line reduce $pe | grep -q 'is in allreduce 4 B (world, call #2) for [0-9.]* s; waits for PE 3\$'"
done
check "reduce: summary" "has reduce '  summary: PEs 0,1,2 wait for PE 3; PE 3 is not in a Tessera call'"

hang wait
common wait
for pe in 0 1 2; do
  check "wait: PE $pe is in shmem_wait_until, for a write" \
    "line wait $pe | grep -q 'is in shmem_wait_until (symmetric offset 0x[0-9a-f]*) for [0-9.]* s; waits for a write (no PE named)\$'"
done
check "wait: the waiters say what they wait for" "has wait '        waiting for shmem_int_wait_until: .* == 1, value seen 0'"
check "wait: summary names PE 3" \
  "has wait '  summary: PEs 0,1,2 wait for a write (no PE named); PE 3 is not in a Tessera call'"

hang mixed
common mixed
check "mixed: PE 0 in the barrier waits for PEs 1,2,3" "line mixed 0 | grep -q 'is in shmem_barrier_all .*; waits for PEs 1,2,3\$'"
check "mixed: PE 1 in the reduction waits for PEs 0,2,3" "line mixed 1 | grep -q 'is in allreduce 4 B (world, call #2) .*; waits for PEs 0,2,3\$'"
check "mixed: PE 2 in shmem_wait_until" "line mixed 2 | grep -q 'is in shmem_wait_until .*; waits for a write (no PE named)\$'"
check "mixed: summary" "has mixed '  summary: PE 0 waits for PEs 1,2,3; PE 1 waits for PEs 0,2,3; PE 2 is in shmem_wait_until (symmetric offset 0x[0-9a-f]*) for [0-9.]* s, waiting for a write (no PE named); PE 3 is not in a Tessera call (last: [^;]*\$'"

# 2. A cycle: PE 1 waits for a value PE 2 never writes, while PE 2 waits in a barrier for PE 1.
hang cycle
check "cycle: exit status non-zero" "[ $(cat "$tmp/cycle.rc") -ne 0 ]"
check "cycle: one report" "[ \$(grep -c 'tessera-run: hang report:' '$tmp/cycle') -eq 1 ]"
for pe in 0 2 3; do
  check "cycle: PE $pe is in shmem_barrier_all, waiting for PE 1" \
    "line cycle $pe | grep -q 'is in shmem_barrier_all (world, team sync [0-9]*) for [0-9.]* s; waits for PE 1\$'"
done
check "cycle: PE 1 is in shmem_wait_until" \
  "line cycle 1 | grep -q 'is in shmem_wait_until (symmetric offset 0x[0-9a-f]*) for [0-9.]* s; waits for a write (no PE named)\$'"
check "cycle: summary" \
  "has cycle '  summary: PEs 0,2,3 wait for PE 1; PE 1 is in shmem_wait_until (symmetric offset 0x[0-9a-f]*) for [0-9.]* s, waiting for a write (no PE named)\$'"
check "cycle: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 3. The first call on an active set: its set-up (a barrier on the pSync) is a recorded call too.
hang active_set
check "active_set: exit status non-zero" "[ $(cat "$tmp/active_set.rc") -ne 0 ]"
for pe in 0 1 2; do
  check "active_set: PE $pe is in the active set's first call, waiting for PE 3" \
    "line active_set $pe | grep -q 'is in the first call on an active set (world) for [0-9.]* s; waits for PE 3\$'"
done
check "active_set: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 4. No wait deadline, but the job's --timeout: the same report, headed by the launcher's own timeout.
"$run" -n 4 -x TESSERA_TIMEOUT=60 --timeout 2 "$prog" barrier > "$tmp/jobtimeout" 2>&1
echo $? > "$tmp/jobtimeout.rc"
cat "$tmp/jobtimeout"
check "--timeout: exit status 124" "[ $(cat "$tmp/jobtimeout.rc") -eq 124 ]"
check "--timeout: report headed by the job's timeout" "has jobtimeout 'tessera-run: hang report: the job passed its --timeout of 2 s'"
check "--timeout: summary" "has jobtimeout '  summary: PEs 0,1,2 wait for PE 3; PE 3 is not in a Tessera call'"
check "--timeout: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
