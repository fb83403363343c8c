#!/usr/bin/env bash
# Shared CPUs (tools/run/placement.h): with a busy process outside the job, a 1 MiB ping-pong of 100 rounds
# between 2 PEs ends well under a second. Once tessera-run sees the outside load, the PEs' waits keep their
# CPU instead of yielding it (with yields, every hand-off waited out a scheduler slice behind the busy
# process: about 0.4 s in all), and the launcher unbinds the PEs when most of their waits are a peer's large
# transfer; with short hand-offs (4 KiB) they stay bound. The launcher says so; --bind-to core keeps them
# bound with the default waits. Binding again once the CPUs are quiet needs a machine on which nothing else
# runs: tests/unit/run/placement_test.cc checks those decisions. The limits are generous: a check that the
# slices are gone, not a benchmark.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
prog="$build/bin/pe_pingpong_load"
. "$(dirname "$0")/lib.sh"
busy=()
stop_busy() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; busy=(); }
trap 'stop_busy; rm -rf "$tmp"' EXIT
start_busy() { bash -c 'while :; do :; done' & busy+=($!); }
# [BUSY=N] beside_busy ARGS...: tessera-run -n 2 ARGS beside N (1) busy processes that have run for over a
# second (neighbours, not processes starting up); the output in $tmp/out (and shown), the status in rc.
beside_busy() {
  local i
  for ((i = 0; i < ${BUSY:-1}; ++i)); do start_busy; done
  sleep 1.3
  "$run" -n 2 --timeout 120 "$@" > "$tmp/out" 2>&1
  rc=$?
  stop_busy
  cat "$tmp/out"
}

# 1. A busy process before the job: the PEs start bound with waits that keep the CPU, and the 1 MiB
#    hand-offs unbind them; the job warms up for 1 s, then times 100 rounds.
beside_busy --report-bindings "$prog" 1048576 100 1.0 0.2
check "busy from the start: 1 MiB x 100 within the limit, exit 0 ($rc)" "[ $rc -eq 0 ]"
check "launcher names the placement it started with" "grep -q 'placement: PE 0 on CPU' '$tmp/out'"
check "launcher starts the PEs bound with waits that keep the CPU, and says why" "grep -q '1 busy process beside the job at its start; the PEs start bound, one per CPU, and their waits keep the CPU' '$tmp/out'"
check "launcher unbinds them for the 1 MiB hand-offs, and says why" "grep -q 'now run on all of them (of the PEs. last [0-9]* ms of waits, [0-9]* under 16 us, [0-9]* up to 4 ms' '$tmp/out'"

# 1b. The same with 4 KiB hand-offs: the PEs stay bound for the whole run.
beside_busy --report-bindings "$prog" 4096 20000 1.5 1.0
check "busy from the start, 4 KiB: 20000 rounds within the limit, exit 0 ($rc)" "[ $rc -eq 0 ]"
check "4 KiB hand-offs: the PEs stay bound" "grep -q 'the PEs start bound' '$tmp/out' && ! grep -q 'now run on all of them' '$tmp/out'"
check "a CPU is left for the job: waits spin through the busy process's slices, and the launcher says so" \
  "grep -q 'their waits keep the CPU (for up to 20 ms while the busy processes leave the job a CPU)' '$tmp/out'"

# 1c. As many busy processes as CPUs (on 2 CPUs): no CPU is left for the job, the PEs stay bound, and their
#     waits sleep after the shorter spin.
if [ "$(nproc)" -eq 2 ]; then
  BUSY=2 beside_busy --report-bindings "$prog" 4096 2000 1.5 1.0
  check "2 busy processes on 2 CPUs, 4 KiB: exit 0 ($rc)" "[ $rc -eq 0 ]"
  check "no CPU left: the PEs start bound, without the long spins" \
    "grep -q '2 busy processes beside the job at its start; the PEs start bound, one per CPU, and their waits keep the CPU$' '$tmp/out'"
else
  echo "skip: 1c needs a machine of 2 CPUs (this one has $(nproc))"
fi

# 2. The busy process starts after the PEs: the launcher sees it in its samples and unbinds the running PEs
#    (within about 0.6 s; the warm-up lasts 2 s).
"$run" -n 2 --timeout 120 --report-bindings "$prog" 1048576 100 2.0 0.2 > "$tmp/out" 2>&1 &
job=$!
sleep 0.3
start_busy
wait $job
rc=$?
stop_busy
cat "$tmp/out"
check "busy from the middle: 1 MiB x 100 within the limit, exit 0 ($rc)" "[ $rc -eq 0 ]"
check "launcher first keeps the running PEs bound, and says why" "grep -q 'processes outside the job use .*; the PEs stay bound' '$tmp/out'"
check "launcher unbinds them for the 1 MiB hand-offs, and says why" "grep -q 'processes outside the job use .* now run on all of them' '$tmp/out'"

# 3. --bind-to core keeps the binding whatever runs (timing not checked: bound, it is slow by design).
beside_busy --bind-to core --report-bindings "$prog" 4096 20 1.0 60
check "--bind-to core: exit 0 ($rc)" "[ $rc -eq 0 ]"
check "--bind-to core: says so" "grep -q 'bound, whatever else runs (--bind-to core)' '$tmp/out'"
check "--bind-to core: never unbinds" "! grep -q -e 'now run on all of them' -e 'start unbound' '$tmp/out'"

# 4. An unknown policy is refused by name, from the option and from the environment.
"$run" -n 2 --bind-to socket "$prog" 8 1 0 1 > "$tmp/out" 2>&1
check "--bind-to socket refused with usage status 2" "[ $? -eq 2 ] && grep -q 'socket' '$tmp/out'"
TESSERA_BIND=sockets "$run" -n 2 "$prog" 8 1 0 1 > "$tmp/out" 2>&1
check "TESSERA_BIND=sockets refused, naming value and choices" "[ $? -ne 0 ] && grep -q 'TESSERA_BIND=\"sockets\": expected auto, core or none' '$tmp/out'"
check "nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
