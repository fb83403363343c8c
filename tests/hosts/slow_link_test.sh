#!/usr/bin/env bash
# The RMA ordering, signal, put/get and collective tests across namespace hosts whose links are slowed
# (netns.sh's hosts_link: tc tbf at 300 Mbit/s each way, and a 1 ms netem delay where the kernel has netem),
# so that messages, acknowledgments and large transfers overlap for milliseconds instead of microseconds:
#  (a) the limit is in place: tbf on the hosts' links, and a 16 MiB broadcast repeated 5 times takes at least
#      the time 80 MiB need at that rate (a lower bound: only a link that is not limited can fail it);
#  (b) pe_pgas_order, pe_pgas_rma, pe_pgas_signal and the collectives across hosts pass on 2 hosts of 1 and
#      of 2 PEs over the slow link;
#  (c) 50 jobs that end with non-blocking puts and atomics in flight to the other host finalize and exit 0;
#  (d) a PE on h2 killed in the middle of a 64 MiB allreduce, and in the middle of 16 MiB puts to it, across the
#      slow link: the launcher exits 137 within 5 s with one line naming the PE and host, and no process or
#      /dev/shm object of the job is left on either host.
# Usage: slow_link_test.sh [BUILD_DIR]. Skips (77) unless run as root.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
bin=$build/bin
# shellcheck source=netns.sh disable=SC1091
. "$here/netns.sh"
hosts_require_root
for b in tessera-run tessera-perf pe_pgas_order pe_pgas_rma pe_pgas_signal pe_coll_hosts pe_finalize_inflight; do
  [ -x "$bin/$b" ] || { echo "FAIL $bin/$b is not built"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-slow-link.XXXXXX")
trap 'hosts_down; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export TESSERA_RSH=$here/rsh
fails=0 passes=0
check() { if eval "$2"; then passes=$((passes+1)); echo "ok   $1"; else fails=$((fails+1)); echo "FAIL $1"; fi; }
# job LIMIT_S NAME ARGS...: tessera-run ARGS under a deadline; rc (124: the deadline) and ms.
job() {
  local limit=$1 name=$2; shift 2
  local t0; t0=$(date +%s%N)
  timeout -k 5 "$limit" "$bin/tessera-run" --timeout "$limit" "$@" > "$work/$name.out" 2> "$work/$name.err"
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" = 0 ] || { echo "---- $name (rc $rc), the last lines of its stderr:"; tail -5 "$work/$name.err"; }
}

rate_mbit=300
hosts_up 2 || { echo "FAIL hosts_up 2"; exit 1; }
hosts_link rate=${rate_mbit}mbit delay=1ms
link=$?
[ "$link" = 2 ] && echo "note: no netem on this kernel: the links are rate-limited without the delay"
check "hosts_link rate=${rate_mbit}mbit (status $link)" "[ $link -eq 0 ] || [ $link -eq 2 ]"
check "h1's eth0 has the token bucket" "host_exec h1 tc qdisc show dev eth0 | grep -q tbf"

# (a) 5 x 16 MiB from h1 to h2 at 300 Mbit/s (37.5 MB/s) take >= 2.2 s; anything under 1.5 s means no limit.
job 120 bcast --hosts h1,h2 --env TESSERA_TIMEOUT=60 "$bin/tessera-perf" broadcast -b 16M -e 16M -n 4 -w 1
check "a 16 MiB broadcast x5 across the slowed link passes (rc=$rc)" "[ $rc -eq 0 ]"
check "and takes at least the time the rate allows (${ms} ms >= 1500)" "[ $ms -ge 1500 ]"

# (b) the tests, 2 hosts of 1 PE and of 2
for layout in h1,h2 h1:2,h2:2; do
  for p in pe_pgas_order pe_pgas_rma pe_pgas_signal; do
    job 240 "$p-$layout" --hosts "$layout" --env TESSERA_TIMEOUT=60 "$bin/$p" --gtest_brief=1
    check "$p on $layout over the slow link (rc=$rc, ${ms} ms)" "[ $rc -eq 0 ]"
  done
  job 240 "coll-$layout" --hosts "$layout" --env TESSERA_TIMEOUT=60 --env TESSERA_BUFFSIZE=64K "$bin/pe_coll_hosts" \
    --gtest_brief=1 --gtest_filter='Hosts.Allreduce*:Hosts.Reductions*:Hosts.Alltoall*:Hosts.LargeMessages*:Hosts.BarrierOrdersAtomics'
  check "collectives across hosts on $layout over the slow link (rc=$rc, ${ms} ms)" "[ $rc -eq 0 ]"
done

# (c) finalize with traffic in flight, 50 jobs
bad=0 slowest=0
for i in $(seq 1 50); do
  job 60 "fin$i" --hosts h1:2,h2:2 --env TESSERA_TIMEOUT=30 "$bin/pe_finalize_inflight"
  [ "$rc" = 0 ] && grep -q "^finalize_inflight: ok" "$work/fin$i.out" || bad=$((bad+1))
  [ "$ms" -gt "$slowest" ] && slowest=$ms
done
check "50 jobs finalize with puts and atomics in flight to the other host ($bad failed, slowest ${slowest} ms)" "[ $bad -eq 0 ]"

# (d) kill_mid NAME HOSTS PE ARGS...: starts tessera-run --hosts HOSTS ARGS, kills PE (which runs on h2) once
# the job has run 4 s (its transfers take seconds at this rate), and checks how the job ends and what it leaves.
kill_mid() {
  local name=$1 layout=$2 victim=$3; shift 3
  "$bin/tessera-run" --hosts "$layout" --timeout 120 --env TESSERA_TIMEOUT=60 "$@" \
    > "$work/$name.out" 2> "$work/$name.err" &
  local lpid=$! pe2="" p
  sleep 4
  for p in $(host_pids h2); do
    [ "$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^TESSERA_RANK=//p')" = "$victim" ] && pe2=$p && break
  done
  if [ -z "$pe2" ]; then
    check "$name: PE $victim found on h2" false; kill -KILL "$lpid" 2>/dev/null; wait "$lpid"; return
  fi
  local t0; t0=$(date +%s%N)
  kill -KILL "$pe2"
  local end=$(( t0 + 10000000000 ))
  while kill -0 "$lpid" 2>/dev/null && [ "$(date +%s%N)" -lt "$end" ]; do sleep 0.02; done
  kill -0 "$lpid" 2>/dev/null && kill -KILL "$lpid"
  wait "$lpid"; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "$name: PE $victim killed mid-transfer ends the job with 137 within 5 s (rc=$rc, ${ms} ms)" \
        "[ $rc -eq 137 ] && [ $ms -lt 5000 ]"
  check "$name: the launcher names it: PE $victim on host h2 killed by signal 9" \
        "grep -q '^tessera-run: PE $victim on host h2 killed by signal 9 (SIGKILL); ending the job' '$work/$name.err'"
  hosts_clean_within 5
  check "$name: nothing of the job left on h1 or h2 within 5 s${left:+ (left: $left)}" "[ -z \"\$left\" ]"
}
kill_mid allreduce h1:2,h2:2 2 "$bin/tessera-perf" allreduce -b 64M -e 64M -n 50 -w 0
kill_mid puts h1,h2 1 "$bin/tessera-perf" rma -b 16M -e 16M -p 50   # PE 0 puts to PE 1

echo "slow_link_test: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
