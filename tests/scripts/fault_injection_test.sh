#!/usr/bin/env bash
# Fault injection: a random PE of 4, killed by a random signal (KILL, SEGV, ABRT, TERM or BUS) at a random
# moment of puts, barriers, a collective (its algorithm forced through TESSERA_ALGO in some rounds), SPMD
# kernels, comm-stream work or computation outside the library (tests/pe/fault_mix.cc). Every round, the job
# must end within 1 s of the kill on this host, exit non-zero, and the launcher must name the PE and the
# signal; no segment of the job may stay in /dev/shm and no process of it in the process table. Prints the
# time each round took to end the job, and the worst and the median.
#
#   fault_injection_test.sh <build> [--rounds N] [--seed S] [--only R]
#
# Rounds draw their phase, algorithm, PE, delay and signal from $RANDOM seeded with S (printed), so
# "--seed S --only R" replays round R of a run exactly (up to where the delay lands in the work).
# scripts/fault_rounds.sh runs many rounds (the long run of docs/testing.md).
set -u
build=${1:?build dir}
shift
rounds=20 seed=$(( $(date +%s%N) / 1000 % 32768 )) only=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 <build> [--rounds N] [--seed S] [--only R]" >&2; exit 2 ;;
  esac
done
run="$build/bin/tessera-run"
info="$build/bin/tessera-info"
prog="$build/bin/pe_fault_mix"
. "$(dirname "$0")/lib.sh"
# A PE killed by SEGV, ABRT or BUS would otherwise dump core first (a file per round, and the dump of a PE's
# mappings delays its death): the bound is on ending the job, not on writing cores.
ulimit -c 0

npes=4 bound_ms=1000
read -r -a phases <<< "$("$prog" --phases | tr '\n' ' ')"  # the program's own list, in its order
kinds=(allreduce allgather alltoall broadcast reduce_scatter reduce)
signals=(KILL SEGV ABRT TERM BUS)
# The algorithms of each collective, as the library lists them (one source of truth: src/coll/algos).
declare -A algos
for k in "${kinds[@]}"; do
  algos[$k]=$("$info" --coll "$k" --bytes 1M --ranks $npes |
              awk '/^  algorithm/ {t=1; next} /choice:/ {t=0} t && NF {print $1}' | tr '\n' ' ')
  check "tessera-info lists the algorithms of $k (${algos[$k]})" "[ -n \"${algos[$k]}\" ]"
done
check "pe_fault_mix lists its phases (${phases[*]})" "[ ${#phases[@]} -gt 10 ]"

# The program itself, without a fault: every phase of the mix, checked results, exit 0.
mkdir -p "$tmp/clean"
"$run" -n $npes --timeout 60 "$prog" "$tmp/clean" mix "$seed" 60 > "$tmp/clean/out" 2>&1
rc=$?
check "fault_mix without a fault: 60 mixed iterations exit 0 ($rc)" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || cat "$tmp/clean/out"

# No process started for round directory $1 is left: neither a PE whose pid it holds nor one whose command
# line names it.
job_gone() {
  pgrep -f "$prog $1 " >/dev/null && return 1
  for p in $(cat "$1"/pe?); do kill -0 "$p" 2>/dev/null && return 1; done
  return 0
}

echo "seed $seed, $rounds rounds (replay one with: $0 $build --seed $seed --only <round>)"
RANDOM=$seed
times=()
for round in $(seq 1 "$rounds"); do
  # Every draw happens in every round, so that --only replays the same values.
  phase=${phases[$(( (round - 1) % ${#phases[@]} ))]}
  kind=$phase
  case $phase in
    collectives|stream|mix) kind=${kinds[$((RANDOM % ${#kinds[@]}))]} ;;
    put|barrier|kernel|compute) kind= ;;
  esac
  algo=
  if [ -n "$kind" ]; then
    read -r -a list <<< "${algos[$kind]}"
    pick=$((RANDOM % (${#list[@]} + 1)))  # one more than the list: the cost model's own choice
    [ $pick -lt ${#list[@]} ] && algo="$kind=${list[$pick]}"
  fi
  pe=$((RANDOM % npes))
  delay_ms=$((RANDOM % 400))
  sig=${signals[$((RANDOM % ${#signals[@]}))]}
  [ "$only" -ne 0 ] && [ "$round" -ne "$only" ] && continue

  d=$(printf '%s/r%04d' "$tmp" "$round")
  mkdir -p "$d"
  what="round $round: phase $phase, TESSERA_ALGO=${algo:-(cost model)}, PE $pe, SIG$sig after ${delay_ms} ms"
  "$run" -n $npes --timeout 60 ${algo:+--env TESSERA_ALGO=$algo} "$prog" "$d" "$phase" "$seed" > "$d/out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 400); do
    [ -s "$d/pe0" ] && [ -s "$d/pe1" ] && [ -s "$d/pe2" ] && [ -s "$d/pe3" ] && [ -s "$d/job" ] && break
    kill -0 $launcher 2>/dev/null || break
    sleep 0.05
  done
  if ! [ -s "$d/pe$pe" ] || ! kill -0 $launcher 2>/dev/null; then
    check "$what: the PEs start and enter their loop" false
    kill -TERM $launcher 2>/dev/null; wait $launcher
    cat "$d/out"
    continue
  fi
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  victim=$(cat "$d/pe$pe")
  # A watchdog, so that a job that does not end fails this round instead of hanging the test; killed, it
  # takes its sleep with it.
  ( trap 'kill $nap 2>/dev/null; exit 0' TERM; sleep 10 & nap=$!; wait $nap && kill -TERM $launcher 2>/dev/null ) &
  watchdog=$!
  start=$(date +%s%N)
  kill -"$sig" "$victim"
  wait $launcher
  rc=$?
  end=$(date +%s%N)
  kill $watchdog 2>/dev/null; wait $watchdog 2>/dev/null
  ms=$(( (end - start) / 1000000 ))
  times+=("$ms")
  signum=$(kill -l "$sig")
  job=$(cat "$d/job")
  read -r load _ < /proc/loadavg
  echo "$what: job ended in $ms ms, status $rc (load average $load)"
  before=$fails
  check "  ended within $bound_ms ms" "[ $ms -lt $bound_ms ]"
  check "  exit status non-zero" "[ $rc -ne 0 ]"
  check "  launcher names PE $pe and SIG$sig" \
        "grep -q 'tessera-run: PE $pe killed by signal $signum (SIG$sig); ending the job' '$d/out'"
  check "  no wrong result before the kill" "! grep -q '^fault_mix:' '$d/out'"
  # No signal handler of a library ran first (UCX's would print "Caught signal" and a backtrace).
  check "  the PE died of the signal at once" "! grep -q 'Caught signal' '$d/out'"
  check "  nothing of job $job in /dev/shm" "! ls /dev/shm | grep -q '^tessera-$job-'"
  check "  no process of the job left" "job_gone '$d'"
  [ $fails -eq $before ] || sed 's/^/  | /' "$d/out"
done

if [ ${#times[@]} -gt 0 ]; then
  sorted=($(printf '%s\n' "${times[@]}" | sort -n))
  echo "time to end the job after the kill over ${#times[@]} rounds: worst ${sorted[-1]} ms," \
       "median ${sorted[$(( (${#sorted[@]} - 1) / 2 ))]} ms (bound $bound_ms ms)"
fi
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
