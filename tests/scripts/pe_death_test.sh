#!/usr/bin/env bash
# When a PE dies in the middle of a barrier loop, the job ends within 5 s, names that PE, exits non-zero and
# leaves nothing in /dev/shm. Also: the launcher killed by SIGTERM/SIGINT leaves nothing behind either, and
# what a launcher killed by SIGKILL leaves, the next launcher removes.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
prog="$build/bin/pe_barrier_loop"
. "$(dirname "$0")/lib.sh"

# 1. SIGKILL one PE of four (oversubscribed) in the middle of the barrier loop.
"$run" -n 4 --timeout 60 "$prog" "$tmp/pid" > "$tmp/out" 2>&1 &
launcher=$!
for _ in $(seq 1 100); do [ -s "$tmp/pid" ] && break; sleep 0.05; done
sleep 0.3
start=$(date +%s%N)
kill -KILL "$(cat "$tmp/pid")"
wait $launcher
rc=$?
end=$(date +%s%N)
elapsed_ms=$(( (end - start) / 1000000 ))
cat "$tmp/out"
check "job ended within 5 s of the kill (took ${elapsed_ms} ms)" "[ $elapsed_ms -lt 5000 ]"
check "exit status non-zero ($rc)" "[ $rc -ne 0 ]"
check "launcher names the dead PE" "grep -q 'tessera-run: PE 2 killed by signal 9 (SIGKILL); ending the job' '$tmp/out'"
check "nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
check "no PE process left" "! pgrep -f '$prog' >/dev/null"

# 2. The launcher itself receives SIGTERM (then SIGINT) while PEs run.
for sig in TERM INT; do
  rm -f "$tmp/pid"
  "$run" -n 3 --timeout 60 "$prog" "$tmp/pid" > "$tmp/out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 100); do [ -s "$tmp/pid" ] && break; sleep 0.05; done
  sleep 0.2
  kill -$sig $launcher
  wait $launcher
  rc=$?
  check "SIG$sig to the launcher: exit status non-zero ($rc)" "[ $rc -ne 0 ]"
  check "SIG$sig to the launcher: says why" "grep -q 'tessera-run: received SIG$sig; ending the job' '$tmp/out'"
  sleep 0.5
  check "SIG$sig to the launcher: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
  check "SIG$sig to the launcher: no PE process left" "! pgrep -f '$prog' >/dev/null"
done

# 2b. The launcher killed by SIGKILL before its PEs have started Tessera: nothing can clean up then (the
# PEs die with it), and its control segment stays; the next launcher of the same user removes it.
rm -f "$tmp/pid"
"$run" -n 2 sh -c 'echo $$ > "$0.$TESSERA_JOB_RANK"; exec sleep 60' "$tmp/pid" > "$tmp/out" 2>&1 &
launcher=$!
for _ in $(seq 1 100); do [ -s "$tmp/pid.0" ] && break; sleep 0.05; done
job_id=$(tr '\0' '\n' < "/proc/$(cat "$tmp/pid.0")/environ" | sed -n 's/^TESSERA_JOB_ID=//p')
kill -KILL $launcher
wait $launcher 2>/dev/null
for _ in $(seq 1 100); do ! pgrep -f 'exec sleep 60|^sleep 60' >/dev/null && break; sleep 0.05; done
check "SIGKILL to the launcher: its control segment is left (job $job_id)" \
  "[ -n '$job_id' ] && [ -e '/dev/shm/tessera-$job_id-ctl' ]"
"$run" -n 1 true
check "the next launcher removed it" "[ ! -e '/dev/shm/tessera-$job_id-ctl' ]"
check "SIGKILL to the launcher: nothing left in /dev/shm after the next job" "[ -z \"\$(leftovers)\" ]"

# 3. The whole-job deadline.
"$run" -n 2 --timeout 1 "$prog" > "$tmp/out" 2>&1
rc=$?
check "--timeout ends the job with status 124 ($rc)" "[ $rc -eq 124 ] && grep -q 'job timed out after 1 s' '$tmp/out'"
check "--timeout: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

# 4. A clean run of many barriers, tagged output.
out=$("$run" -n 4 --tag-output "$prog" "" 2000 2>&1); rc=$?
check "2000 barriers on 4 PEs exit 0 ($rc)" "[ $rc -eq 0 ]"
out=$("$run" -n 2 --tag-output sh -c 'echo hello from $TESSERA_JOB_RANK' 2>&1)
check "--tag-output prefixes lines" "echo \"$out\" | grep -q '^\[PE 1\] hello from 1$'"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
