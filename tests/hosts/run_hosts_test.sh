#!/usr/bin/env bash
# tessera-run --hosts / --hostfile across namespace hosts (netns.sh; tests/hosts/rsh as TESSERA_RSH):
#  (a) PEs land on their hosts in blocks, --tag-output names host and PE, the PEs' environment is the job's
#      (no TESSERA_HOST_ID, no secret on any command line), a hostfile works, statuses come back;
#  (b) PGAS and collective programs pass with PEs on two hosts, which reach each other through UCX over
#      the hosts' network (the transports line, and h1's eth0 counters);
#  (c) a PE killed mid-run, the agent of a host killed, SIGTERM to the launcher, the launcher killed with
#      SIGKILL, --timeout, a host that cannot be reached, and at the end a whole host killed: each ends the job within
#      5 s (the launcher with one line naming the PE or host), and leaves no process in any host and
#      nothing in any host's /dev/shm;
#  (d) mistakes in --hosts, --hostfile and -n are refused with clear messages.
# Usage: run_hosts_test.sh [BUILD_DIR]. Skips (77) unless run as root. Every job runs under a deadline.
# shellcheck disable=SC2016  # PE commands and check expressions are single-quoted on purpose
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
bin=$build/bin
run=$bin/tessera-run
# shellcheck source=netns.sh disable=SC1091
. "$here/netns.sh"
hosts_require_root
for b in tessera-run pe_init_again pe_pgas_rma pe_pgas_amo pe_pgas_signal pe_shmem_coll pe_coll_hosts pe_moe pe_gnn pe_fused \
         pe_coll_plan pe_compute_stream pe_coll_register pe_barrier_loop; do
  [ -x "$bin/$b" ] || { echo "FAIL $bin/$b is not built"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-run-hosts.XXXXXX")
trap 'hosts_down; rm -rf "$work"' EXIT
trap 'exit 130' INT      # exit runs the EXIT trap; returning would resume the checks without hosts
trap 'exit 143' TERM

fails=0 passes=0
check() { if eval "$2"; then passes=$((passes+1)); echo "ok   $1"; else fails=$((fails+1)); echo "FAIL $1"; fi; }
export TESSERA_RSH=$here/rsh
# A PE that waits for a peer gives up after this long (the failure cases must not rely on it).
job_env=(--env TESSERA_TIMEOUT=30)

# launch NAME ARGS...: starts tessera-run ARGS in the background, its stdout and stderr in $work/NAME.out
# and .err; sets lpid and lstart (ns).
launch() {
  local name=$1; shift
  "$run" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  lpid=$!
  lstart=$(date +%s%N)
}
# finish LIMIT_S: waits for the launcher $lpid; sets rc and ms (since $lstart, or since $2 ns when given).
# A launcher still running after LIMIT_S is killed, and rc is 999.
finish() {
  local limit=$1 from=${2:-$lstart} end
  end=$(( $(date +%s%N) + limit * 1000000000 ))
  while kill -0 "$lpid" 2>/dev/null && [ "$(date +%s%N)" -lt "$end" ]; do sleep 0.02; done
  if kill -0 "$lpid" 2>/dev/null; then
    kill -KILL "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null; rc=999
  else
    wait "$lpid"; rc=$?
  fi
  ms=$(( ($(date +%s%N) - from) / 1000000 ))
}
# job LIMIT_S NAME ARGS...: launch and finish.
job() { local limit=$1; shift; launch "$@"; finish "$limit"; }

launcher_lines() { grep -c '^tessera-run:' "$work/$1.err"; }
# only_line NAME LINE: the launcher's own lines in job NAME's stderr are exactly LINE; only_line_from: one
# line, which starts with LINE.
only_line() { [ "$(grep '^tessera-run:' "$work/$1.err")" = "$2" ]; }
only_line_from() {
  local l
  l=$(grep '^tessera-run:' "$work/$1.err")
  [ "$(launcher_lines "$1")" -eq 1 ] && [ "${l#"$2"}" != "$l" ]
}
# wait_for FILE: true once FILE is non-empty (at most 20 s), then 0.5 s more so that the job is mid-run.
wait_for() {
  for _ in $(seq 1 400); do [ -s "$1" ] && { sleep 0.5; return 0; }; sleep 0.05; done
  return 1
}

hosts_up 3 || { echo "FAIL hosts_up 3"; exit 1; }
t_start=$(date +%s%N)

# (a) Placement, output, environment.
job 30 place --hosts h1:2,h2:1,h3:1 --tag-output \
    sh -c 'echo "rank=$TESSERA_RANK host=$(hostname)"; echo "err=$TESSERA_RANK" >&2'
check "a job of shell PEs on h1:2,h2:1,h3:1 exits 0 (rc=$rc)" "[ $rc -eq 0 ]"
for pair in 0:h1 1:h1 2:h2 3:h3; do
  r=${pair%:*} h=${pair#*:}
  check "PE $r runs on $h, its stdout tagged [$h:$r]" "grep -qxF '[$h:$r] rank=$r host=$h' '$work/place.out'"
  check "PE $r's stderr reaches stderr, tagged [$h:$r]" "grep -qxF '[$h:$r] err=$r' '$work/place.err'"
done
check "no line of the launcher's own in a clean job" "[ \$(launcher_lines place) -eq 0 ]"

job 30 untagged --hosts h1,h2 sh -c 'printf "no newline at the end"'
check "an untagged job passes the PEs' output as it is, a last partial line ended" \
      "[ \$(grep -cx 'no newline at the end' '$work/untagged.out') -eq 2 ]"

printf '# test cluster\nh3 slots=1   # the first host: rank 0 listens here\n\nh1 slots=2\nh2\n' > "$work/hostfile"
job 60 hostfile --hostfile "$work/hostfile" -n 3 "${job_env[@]}" --tag-output --env TESSERA_LOG=2 \
    "$bin/pe_pgas_amo" --gtest_brief=1
check "pe_pgas_amo from a hostfile (h3 first, -n 3 of 4 slots) passes (rc=$rc, ${ms} ms)" "[ $rc -eq 0 ]"
check "the hostfile's first host, h3, serves the rendezvous and holds PE 0" \
      "grep -q '^\[h3:0\] tessera: bootstrap (tcp): 3 PEs joined at h3:' '$work/hostfile.err'"
check "-n 3 leaves h2 without a PE: PEs 1-2 join from h1" \
      "grep -q 'rank 1 joined from 10.231.0.1:' '$work/hostfile.err' &&
       grep -q 'rank 2 joined from 10.231.0.1:' '$work/hostfile.err' && ! grep -q '^\[h2:' '$work/hostfile.err'"

job 30 status --hosts h1:2,h2:2 sh -c '[ "$TESSERA_RANK" = 3 ] && exit 3; exit 0'
check "a PE's non-zero status is the launcher's (rc=$rc)" "[ $rc -eq 3 ]"
check "one line names it: PE 3 on host h2 exited with status 3" \
      "only_line_from status 'tessera-run: PE 3 on host h2 exited with status 3'"

job 30 leftover --hosts h1,h2 sh -c 'sleep 60 & echo started'
check "PEs that leave a process holding their output: status 0 within 4 s (rc=$rc, ${ms} ms)" \
      "[ $rc -eq 0 ] && [ $ms -lt 4000 ] && [ \$(grep -cx started '$work/leftover.out') -eq 2 ]"
check "... and what they left is killed with the job" "hosts_clean_within 1 || { echo \"\$left\"; false; }"

job 30 noexec --hosts h1,h2 /nonexistent/program
check "a program that does not exist: status 127 (rc=$rc)" "[ $rc -eq 127 ]"
check "... and each host says it cannot start it" \
      "grep -q 'cannot start /nonexistent/program on host h2: No such file' '$work/noexec.err'"

# (b) Programs across hosts, through UCX over the hosts' network.
tx_h1() { host_exec h1 awk '$1 == "eth0:" { print $10 }' /proc/net/dev; }
tx0=$(tx_h1)
job 60 rma --hosts h1:2,h2:2 "${job_env[@]}" --env TESSERA_LOG=2 "$bin/pe_pgas_rma" --gtest_brief=1
tx1=$(tx_h1)
check "pe_pgas_rma on h1:2,h2:2 passes (rc=$rc, ${ms} ms)" "[ $rc -eq 0 ]"
check "PE 0 reaches PE 1 through shared memory and PEs 2-3 through UCX" \
      "grep -q \"transports (PE 0's view): self for PE 0; shm for PE 1; ucx for PEs 2-3\" '$work/rma.err'"
check "h1's eth0 sent more than 1 MiB during the run ($((tx1 - tx0)) bytes)" "[ $((tx1 - tx0)) -gt 1048576 ]"
# The namespace hosts are one machine (one kernel, one boot id): its CPUs serve all four PEs, which is what
# "more PEs than CPUs" counts (a real host of two PEs would count two).
check "PE 0 counts the 4 PEs of both namespace hosts as sharing this machine's CPUs" \
      "grep -q 'usable CPUs for the 4 PEs of the job on this machine' '$work/rma.err'"
# The workloads too: MoE dispatch/combine, GNN aggregation and the fused products across the hosts' network;
# persistent plans and captured graphs, compute streams joined to collectives by events, registered buffers.
for p in pe_pgas_amo pe_pgas_signal pe_shmem_coll pe_coll_hosts pe_moe pe_gnn pe_fused pe_coll_plan \
         pe_compute_stream pe_coll_register; do
  job 60 "$p" --hosts h1:2,h2:2 "${job_env[@]}" "$bin/$p" --gtest_brief=1
  check "$p on h1:2,h2:2 passes (rc=$rc, ${ms} ms)" "[ $rc -eq 0 ]"
  [ "$rc" -eq 0 ] || tail -n 30 "$work/$p.out" "$work/$p.err" | sed 's/^/     | /'
done
# Initializing again after the last finalize (three rounds of init and finalize, tests/spec/init_again.c):
# the hosts join through the TCP rendezvous a second and third time, with PE 0 late to serve them once.
for delay in 0 1500; do
  job 60 "init_again_$delay" --hosts h1:2,h2:2 "${job_env[@]}" --env INIT_AGAIN_PE0_DELAY_MS=$delay "$bin/pe_init_again"
  check "init after the last finalize on h1:2,h2:2, PE 0 $delay ms late, passes (rc=$rc, ${ms} ms)" "[ $rc -eq 0 ]"
  [ "$rc" -eq 0 ] || tail -n 30 "$work/init_again_$delay.err" | sed 's/^/     | /'
done
check "nothing is left after the passing jobs" "hosts_clean_within 2 || { echo \"\$left\"; false; }"

# (c) Failures mid-run. pe_barrier_loop's PE 2 writes its pid to the file it is given; with "fork", it first
# starts a child that sleeps, holding PE 2's output pipes, its pid in FILE.child.
pidf=$work/pe2.pid
rm -f "$pidf" "$pidf.child"
TESSERA_HOST_ID=not-for-the-pes launch kill_pe --hosts h1:2,h2:2 "${job_env[@]}" "$bin/pe_barrier_loop" "$pidf" -1 fork
if wait_for "$pidf"; then
  pe2=$(cat "$pidf")
  child=$(cat "$pidf.child")
  envof() { tr '\0' '\n' < "/proc/$pe2/environ" | sed -n "s/^$1=//p"; }
  secret=$(envof TESSERA_JOB_SECRET)
  check "PE 2 has the job's secret (64 hex digits)" "[[ '$secret' =~ ^[0-9a-f]{64}$ ]]"
  check "PE 2 has TESSERA_RANK=2, TESSERA_SIZE=4, the rendezvous at h1 and a job id" \
        "[ \"\$(envof TESSERA_RANK)\" = 2 ] && [ \"\$(envof TESSERA_SIZE)\" = 4 ] &&
         [[ \"\$(envof TESSERA_BOOTSTRAP)\" =~ ^tcp://h1:[0-9]+$ ]] &&
         [[ \"\$(envof TESSERA_JOB_ID)\" =~ ^[0-9a-f]{16}$ ]]"
  check "PE 2 does not inherit TESSERA_HOST_ID (its host is real)" "! grep -qz '^TESSERA_HOST_ID=' /proc/$pe2/environ"
  printf '%s\n' "$secret" > "$work/secret"   # grep reads it from the file: on its own command line it would match
  check "no command line on the machine holds the secret" \
        "! cat /proc/[0-9]*/cmdline 2>/dev/null | grep -qaFf '$work/secret'"
  agents=$(for p in $(host_members h2); do tr '\0' ' ' < "/proc/$p/cmdline"; echo; done | grep -cxF "$run --agent ")
  check "h2 runs one agent, started as '$run --agent'" "[ $agents -eq 1 ]"
  # What a PE that died during start-up would leave: objects named by the job's id, which the agents remove;
  # and another job's object, which they must not.
  id=$(envof TESSERA_JOB_ID)
  for h in h1 h2; do host_exec $h touch "/dev/shm/tessera-$id-planted"; done
  host_exec h2 touch /dev/shm/tessera-0123456789abcdef-other-job
  t_kill=$(date +%s%N)
  kill -KILL "$pe2"
  finish 10 "$t_kill"
  check "kill -9 of PE 2 on h2: the launcher exits 137 within 5 s (rc=$rc, ${ms} ms)" \
        "[ $rc -eq 137 ] && [ $ms -lt 5000 ]"
  check "one line of the launcher's: PE 2 on host h2 killed by signal 9 (SIGKILL); ending the job" \
        "only_line kill_pe 'tessera-run: PE 2 on host h2 killed by signal 9 (SIGKILL); ending the job'"
  check "the child PE 2 started is gone with it (pid $child)" "! _hosts_alive $child"
  check "h2's agent left another job's /dev/shm object alone" \
        "host_exec h2 rm /dev/shm/tessera-0123456789abcdef-other-job"
  check "... and no process or /dev/shm object is left on any host (the job's planted ones removed)" \
        "hosts_clean_within 1 || { echo \"\$left\"; false; }"
else
  check "pe_barrier_loop started (PE 2 wrote its pid)" false
  finish 1
fi

rm -f "$pidf"
launch kill_agent --hosts h1:2,h2:2 "${job_env[@]}" "$bin/pe_barrier_loop" "$pidf"
if wait_for "$pidf"; then
  agent=$(for p in $(host_members h2); do [ "$(tr '\0' ' ' < "/proc/$p/cmdline")" = "$run --agent " ] && echo "$p"; done)
  t_kill=$(date +%s%N)
  kill -KILL "$agent"
  finish 10 "$t_kill"
  check "kill -9 of h2's agent: the launcher exits 1 within 5 s (rc=$rc, ${ms} ms)" "[ $rc -eq 1 ] && [ $ms -lt 5000 ]"
  want="tessera-run: host h2 (PEs 2-3) disappeared: its agent's connection closed; ending the job"
  check "one line: ${want#tessera-run: }" 'only_line kill_agent "$want"'
  check "... and nothing is left on any host" "hosts_clean_within 1 || { echo \"\$left\"; false; }"
else
  check "pe_barrier_loop started (PE 2 wrote its pid)" false
  finish 1
fi

rm -f "$pidf"
launch sigterm --hosts h1:2,h2:2 "${job_env[@]}" "$bin/pe_barrier_loop" "$pidf"
if wait_for "$pidf"; then
  t_kill=$(date +%s%N)
  kill -TERM "$lpid"
  finish 10 "$t_kill"
  check "SIGTERM to the launcher: it exits 143 within 5 s (rc=$rc, ${ms} ms)" "[ $rc -eq 143 ] && [ $ms -lt 5000 ]"
  check "one line: received SIGTERM; ending the job" \
        "only_line sigterm 'tessera-run: received SIGTERM; ending the job'"
  check "... and nothing is left on any host" "hosts_clean_within 1 || { echo \"\$left\"; false; }"
else
  check "pe_barrier_loop started (PE 2 wrote its pid)" false
  finish 1
fi

rm -f "$pidf"
launch kill_launcher --hosts h1:1,h2:2,h3:1 "${job_env[@]}" "$bin/pe_barrier_loop" "$pidf"
if wait_for "$pidf"; then
  t_kill=$(date +%s%N)
  kill -KILL "$lpid"
  wait "$lpid" 2>/dev/null
  hosts_clean_within 5
  ok=$?
  ms=$(( ($(date +%s%N) - t_kill) / 1000000 ))
  check "kill -9 of the launcher: no PE, agent or /dev/shm object left on any host within 5 s (${ms} ms)" \
        "[ $ok -eq 0 ] || { echo \"\$left\"; false; }"
else
  check "pe_barrier_loop started (PE 2 wrote its pid)" false
  finish 1
fi

job 30 timeout --hosts h1,h2 --timeout 1 sh -c 'sleep 30'
check "--timeout 1: the launcher exits 124 within 3 s (rc=$rc, ${ms} ms)" "[ $rc -eq 124 ] && [ $ms -lt 3000 ]"
check "one line: job timed out after 1 s (--timeout); ending the job" \
      "only_line timeout 'tessera-run: job timed out after 1 s (--timeout); ending the job'"
check "... and nothing is left on any host (the PEs' sleep included)" "hosts_clean_within 1 || { echo \"\$left\"; false; }"

job 30 unreachable --hosts h1,h9 "${job_env[@]}" sh -c 'sleep 30'
check "a host rsh cannot reach: the launcher exits 1 within 5 s (rc=$rc, ${ms} ms)" "[ $rc -eq 1 ] && [ $ms -lt 5000 ]"
check "one line: host h9 (PE 1): its agent did not start" \
      "only_line_from unreachable 'tessera-run: host h9 (PE 1): its agent did not start'"
check "... after the remote shell's own message" "grep -q 'no host h9' '$work/unreachable.err'"
check "... and nothing is left on any host" "hosts_clean_within 1 || { echo \"\$left\"; false; }"

# (d) Mistakes on the command line: status 2 and a message naming the problem.
usage() {  # usage DESCRIPTION EXPECTED-TEXT ARGS...
  local what=$1 want=$2; shift 2
  "$run" "$@" > "$work/usage.out" 2> "$work/usage.err"
  local st=$? res=false
  [ $st -eq 2 ] && grep -qF -- "$want" "$work/usage.err" && res=true
  check "$what: status 2 and the message (got $st: $(head -c 200 "$work/usage.err"))" $res
}
printf 'h1 slots=2\n# fine\nh2 slots=two\n' > "$work/bad1"
printf 'h1\nh2 cpus=4\n' > "$work/bad2"
printf 'h1\nh1 slots=2\n' > "$work/bad3"
printf '# nothing here\n\n' > "$work/bad4"
usage "-n above the slots" "-n 5: the hosts offer only 4 slots (2 hosts)" -n 5 --hosts h1:2,h2:2 true
usage "slots that are not a number" "--hosts: host h2: slots \"x\": expected a number, 1 to 4096" --hosts h1,h2:x true
usage "zero slots" "host h1: 0 slots: expected 1 to 4096" --hosts h1:0 true
usage "a host named twice" "host h1 is named twice" --hosts h1,h1 true
usage "a host name with a shell character" "host name \"h1;true\": \";\" is not allowed" --hosts 'h1;true' true
usage "a hostfile line with bad slots" "$work/bad1, line 3: host h2: slots \"two\": expected a number" \
      --hostfile "$work/bad1" true
usage "a hostfile line with an unknown word" "$work/bad2, line 2: \"h2 cpus=4\": expected 'host [slots=N]'" \
      --hostfile "$work/bad2" true
usage "a hostfile naming a host twice" "$work/bad3, line 2: host h1 is named twice" --hostfile "$work/bad3" true
usage "an empty hostfile" "$work/bad4: no host in the file" --hostfile "$work/bad4" true
usage "a hostfile that does not exist" "--hostfile $work/none: cannot open it" --hostfile "$work/none" true
usage "-n above a hostfile's slots" "-n 5: the hosts offer only 4 slots (3 hosts)" -n 5 --hostfile "$work/hostfile" true
usage "--hosts and --hostfile together" "--hosts and --hostfile both given" --hosts h1 --hostfile "$work/hostfile" true
usage "-N with --hosts" "-N 2 with --hosts/--hostfile" -N 2 --hosts h1:2 true
usage "--bind-to core with --hosts" "--bind-to core: PEs started on several hosts are not bound" \
      --bind-to core --hosts h1 true
usage "--agent with arguments" "--agent takes no other arguments" --agent x

# Last, as it takes h2 away: the whole host h2 dies (every process in its namespaces, holder included).
rm -f "$pidf"
launch kill_host --hosts h1:1,h2:2,h3:1 "${job_env[@]}" "$bin/pe_barrier_loop" "$pidf"
if wait_for "$pidf"; then
  victims=$( (host_members h2; cat "$NETNS_HOSTS_DIR/h2.pid") | tr '\n' ' ')
  t_kill=$(date +%s%N)
  # shellcheck disable=SC2086
  kill -KILL $victims
  finish 10 "$t_kill"
  check "host h2 killed: the launcher exits 1 within 5 s (rc=$rc, ${ms} ms)" "[ $rc -eq 1 ] && [ $ms -lt 5000 ]"
  want="tessera-run: host h2 (PEs 1-2) disappeared: its agent's connection closed; ending the job"
  check "one line: ${want#tessera-run: }" 'only_line kill_host "$want"'
  check "... and nothing is left on h1 and h3" "hosts_clean_within 1 || { echo \"\$left\"; false; }"
else
  check "pe_barrier_loop started (PE 2 wrote its pid)" false
  finish 1
fi

echo "$passes passed, $fails failed in $(( ($(date +%s%N) - t_start) / 1000000 )) ms with hosts up"
if [ $fails -ne 0 ]; then
  for f in "$work"/*.err; do echo "== $f"; tail -n 20 "$f"; done
  exit 1
fi
