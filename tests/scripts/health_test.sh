#!/usr/bin/env bash
# The live health view: tessera-info --health asks a running job's launcher (tools/run/health.h). A job of 3
# PEs loops over barriers (tests/pe/barrier_loop.c); the view says healthy while they run, names PE 1 as
# stopped and PEs 0 and 2 as overdue in their barrier, waiting for PE 1, while PE 1 is stopped (SIGSTOP), and
# healthy again after SIGCONT; as text and as JSON; by the launcher's pid, a PE's pid, and from the job's own
# environment. A request with another secret is refused, and a view is never healthy while a call is overdue.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
info="$build/bin/tessera-info"
prog="$build/bin/pe_barrier_loop"
. "$(dirname "$0")/lib.sh"

"$run" -n 3 --timeout 120 -x TESSERA_TIMEOUT=60 "$prog" > "$tmp/job.out" 2> "$tmp/job.err" &
launcher=$!
trap 'kill -CONT $(pgrep -f "$prog") 2>/dev/null; kill $launcher 2>/dev/null; wait $launcher 2>/dev/null; rm -rf "$tmp"' EXIT

# Waits until the view answers with every PE initialized.
for _ in $(seq 100); do
  "$info" --health --job $launcher --json > "$tmp/first.json" 2>/dev/null
  python3 -c "import json,sys; j=json.load(open('$tmp/first.json')); sys.exit(0 if all(p['library']=='initialized' for p in j['pe']) else 1)" 2>/dev/null && break
  sleep 0.1
done
check "the view answers once every PE has initialized" \
  "python3 -c \"import json; j=json.load(open('$tmp/first.json')); assert j['pes'] == 3 and len(j['pe']) == 3\""

"$info" --health --job $launcher --overdue 5 > "$tmp/healthy.txt"; rc=$?
cat "$tmp/healthy.txt"
check "healthy while the PEs loop (exit 0, rc=$rc)" "[ $rc -eq 0 ] && grep -q '  summary: healthy: every PE runs' '$tmp/healthy.txt'"
check "a line per PE with its pid and process state" "[ \$(grep -c '^  PE [0-2] (pid [0-9]*, running): ' '$tmp/healthy.txt') -eq 3 ]"

pe1=$(python3 -c "import json; print(json.load(open('$tmp/first.json'))['pe'][1]['pid'])")
kill -STOP "$pe1"
sleep 1.5
"$info" --health --job $launcher --overdue 1 > "$tmp/stopped.txt"; rc=$?
cat "$tmp/stopped.txt"
check "not healthy while PE 1 is stopped (exit 1, rc=$rc)" "[ $rc -eq 1 ]"
# Stopped between barriers or inside one it has not yet seen complete (then overdue there itself).
check "PE 1 named as stopped, with its barrier" \
  "grep -q '^  PE 1 (pid $pe1, stopped): is .*shmem_barrier_all (world, team sync [0-9]*)' '$tmp/stopped.txt'"
for pe in 0 2; do
  check "PE $pe overdue in its barrier, waiting for PE 1" \
    "grep -q '^  PE $pe (pid [0-9]*, running): is in shmem_barrier_all (world, team sync [0-9]*) for [0-9.]* s OVERDUE; waits for PE 1\$' '$tmp/stopped.txt'"
done
check "the summary names the stopped PE and the overdue ones" \
  "grep -q '  summary: NOT HEALTHY: PE 1 is stopped; PEs 0,\(1,\)\?2 overdue (in one call for more than 1.0 s), waiting for PE 1\$' '$tmp/stopped.txt'"
"$info" --health --job "$pe1" --json > "$tmp/stopped.json"; rc=$?
check "as JSON, asked by a PE's pid: stopped [1], 0 and 2 overdue, PE 0 waits for [1] (rc=$rc)" \
  "[ $rc -eq 1 ] && python3 -c \"import json; j=json.load(open('$tmp/stopped.json')); assert not j['healthy'] and j['stopped'] == [1] and {0, 2} <= set(j['overdue']) and j['pe'][0]['waits_for'] == [1] and j['pe'][0]['in_call_s'] >= 1.0, j\""
"$info" --health --job $launcher --overdue 3600 > "$tmp/long.txt"; rc=$?
check "with a longer limit nothing is overdue, but the stopped PE still keeps it from healthy (rc=$rc)" \
  "[ $rc -eq 1 ] && grep -q 'summary: NOT HEALTHY: PE 1 is stopped\$' '$tmp/long.txt'"

sock=$(tr '\0' '\n' < /proc/$pe1/environ | sed -n 's/^TESSERA_JOB_SOCKET=//p')
TESSERA_JOB_SOCKET=$sock TESSERA_JOB_SECRET=$(printf '0%.0s' $(seq 64)) "$info" --health > "$tmp/forged.txt" 2>&1; rc=$?
check "a request with another secret gets no answer (rc=$rc)" "[ $rc -eq 2 ]"
check "and the launcher says it refused it" "grep -q 'refused a bootstrap connection .*wrong secret in a health request' '$tmp/job.err'"

kill -CONT "$pe1"
sleep 0.5
TESSERA_JOB_SOCKET=$sock TESSERA_JOB_SECRET=$(tr '\0' '\n' < /proc/$pe1/environ | sed -n 's/^TESSERA_JOB_SECRET=//p') \
  "$info" --health --overdue 5 > "$tmp/again.txt"; rc=$?
check "healthy again after SIGCONT, asked from the job's environment (rc=$rc)" \
  "[ $rc -eq 0 ] && grep -q 'summary: healthy' '$tmp/again.txt'"

kill $launcher; wait $launcher 2>/dev/null
"$info" --health --job $launcher > "$tmp/gone.txt" 2>&1; rc=$?
check "once the job has ended the view says so (rc=$rc)" "[ $rc -eq 2 ]"
check "nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
