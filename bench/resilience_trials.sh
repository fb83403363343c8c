#!/usr/bin/env bash
# Fault trials of resilient mode (docs/resilience.md): TRIALS jobs of PES PEs under tessera-run
# --on-failure continue, each running a loop of mixed collectives (tests/pe/resilient_mix.c) in which one PE,
# chosen at random, is killed (SIGKILL) or, every STOP_EVERY-th trial, stopped (SIGSTOP, which the launcher
# turns into a kill at half of TESSERA_TIMEOUT) at a random moment. Counts hangs (a job past its --timeout),
# wrong results and failed jobs, checks that nothing is left in /dev/shm, and prints the median and p99
# time from the kill to each survivor's failed call and to its first good call on the shrunk communicator.
# In each SIGSTOP trial, tessera-info --health must name the stopped PE while it is stopped. API=coll runs
# the loop on the C collective API (tesseraCommShrink), API=shmem on OpenSHMEM team calls
# (tests/pe/resilient_mix_teams.c: SHMEMX_PEER_FAILED, shmemx_team_shrink), API=both alternates them.
# HOSTS=h1:2,h2:2 runs the jobs across namespace hosts (root; tests/hosts/netns.sh) with tessera-run --hosts,
# and every HOST_EVERY-th trial loses the last host whole (its agent killed: its PEs die with it), every
# LINK_EVERY-th its link (its port of the namespaces' switch set down, then up again after the job: the
# launcher fences it); the health view, which covers the launcher's host only, is not checked there.
#   bench/resilience_trials.sh [BUILD_DIR]     TRIALS=200 PES=4 SECONDS_PER_JOB=1.5 STOP_EVERY=4 TIMEOUT=4 API=coll
#                                              HOSTS= HOST_EVERY=5 LINK_EVERY=7
# Exits non-zero if any trial went wrong.
set -u
build=${1:-build}
trials=${TRIALS:-200}
pes=${PES:-4}
secs=${SECONDS_PER_JOB:-1.5}
stop_every=${STOP_EVERY:-4}
timeout=${TIMEOUT:-4}
api=${API:-coll}
hosts=${HOSTS:-}
host_every=${HOST_EVERY:-5}
link_every=${LINK_EVERY:-7}
run="$build/bin/tessera-run"
run=$(cd "$(dirname "$run")" && pwd)/tessera-run  # absolute: the agents are found by their command line
case $api in
  coll|shmem|both) ;;
  *) echo "resilience_trials: API=$api is not coll, shmem or both" >&2; exit 2 ;;
esac
for p in pe_resilient_mix pe_resilient_mix_teams; do
  [ -x "$build/bin/$p" ] || { echo "resilience_trials: build $build/bin/$p first" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
where=(-n "$pes") last_host="" last_count=0
if [ -n "$hosts" ]; then
  here=$(cd "$(dirname "$0")/../tests/hosts" && pwd)
  # shellcheck source=../tests/hosts/netns.sh disable=SC1091
  . "$here/netns.sh"
  hosts_require_root
  export TESSERA_RSH=$here/rsh
  n_hosts=$(echo "$hosts" | tr ',' '\n' | wc -l)
  pes=$(echo "$hosts" | tr ',' '\n' | awk -F: '{ s += ($2 == "" ? 1 : $2) } END { print s }')
  last_host=$(echo "$hosts" | tr ',' '\n' | tail -1 | cut -d: -f1)
  last_count=$(echo "$hosts" | tr ',' '\n' | tail -1 | awk -F: '{ print ($2 == "" ? 1 : $2) }')
  hosts_up "$n_hosts" || { echo "resilience_trials: hosts_up $n_hosts failed" >&2; exit 2; }
  trap 'hosts_down; rm -rf "$tmp"' EXIT
  where=(--hosts "$hosts")
fi
ls /dev/shm | grep '^tessera-' > "$tmp/shm_before" || true
bad=0 hangs=0 kills=0 stops=0 losts=0 links=0
for s in KILL STOP HOST LINK; do : > "$tmp/detect.$s"; : > "$tmp/recover.$s"; done
for t in $(seq 1 "$trials"); do
  rm -f "$tmp"/ready.*
  prog="$build/bin/pe_resilient_mix"
  if [ "$api" = shmem ] || { [ "$api" = both ] && [ $(( t % 2 )) -eq 0 ]; }; then prog="$build/bin/pe_resilient_mix_teams"; fi
  victim=$(( RANDOM % pes ))
  delay_ms=$(( 30 + RANDOM % 700 ))  # within the loop's first half: every survivor is still in it
  sig=KILL
  if [ "$stop_every" -gt 0 ] && [ $(( t % stop_every )) -eq 0 ]; then sig=STOP
  elif [ -n "$hosts" ] && [ "$host_every" -gt 0 ] && [ $(( t % host_every )) -eq 0 ]; then sig=HOST
  elif [ -n "$hosts" ] && [ "$link_every" -gt 0 ] && [ $(( t % link_every )) -eq 0 ]; then sig=LINK; fi
  "$run" "${where[@]}" --on-failure continue --timeout 60 --env TESSERA_TIMEOUT="$timeout" \
    "$prog" "$secs" "$tmp/ready" > "$tmp/out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 400); do [ "$(ls "$tmp"/ready.* 2>/dev/null | wc -l)" -eq "$pes" ] && break; sleep 0.01; done
  sleep "$(printf '0.%03d' "$delay_ms")"
  kill_ns=$(date +%s%N)
  vpid=$(cat "$tmp/ready.$victim")
  if [ $sig = LINK ]; then  # the last host's port of the switch
    nsenter -t "$(cat "$NETNS_HOSTS_DIR/switch.pid")" --net ip link set "veth-$last_host" down
  elif [ $sig = HOST ]; then  # the last host's agent: its PEs die with it
    for p in $(host_members "$last_host"); do
      [ "$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)" = "$run --agent " ] && kill -KILL "$p"
    done
  else
    kill -$sig "$vpid" 2>/dev/null
  fi
  if [ $sig = STOP ] && [ -z "$hosts" ]; then
    # While it is stopped (the launcher kills it at half of TESSERA_TIMEOUT), the health view names it and
    # the survivors' overdue calls.
    sleep 1.2
    "$build/bin/tessera-info" --health --job "$vpid" > "$tmp/health" 2>&1
    if ! grep -q "PE $victim (pid $vpid, stopped)" "$tmp/health" || ! grep -q "NOT HEALTHY: PE $victim is stopped" "$tmp/health"; then
      bad=$((bad + 1)); echo "trial $t: the health view did not name stopped PE $victim:"; cat "$tmp/health"
    fi
  fi
  wait $launcher
  rc=$?
  [ $sig = LINK ] && nsenter -t "$(cat "$NETNS_HOSTS_DIR/switch.pid")" --net ip link set "veth-$last_host" up
  want=$((pes - 1))
  case $sig in
    KILL) kills=$((kills + 1)) ;;
    STOP) stops=$((stops + 1)) ;;
    HOST) losts=$((losts + 1)); want=$((pes - last_count)) ;;
    LINK) links=$((links + 1)); want=$((pes - last_count)) ;;
  esac
  survivors=$(grep -c '^mix: ok PE' "$tmp/out")
  if [ $rc -eq 124 ]; then
    hangs=$((hangs + 1)); bad=$((bad + 1)); echo "trial $t: HANG (${prog##*/}, victim $victim, SIG$sig after $delay_ms ms)"; cat "$tmp/out"
  elif [ $rc -ne 0 ] || [ "$survivors" -ne $want ] || grep -q FAILED "$tmp/out"; then
    bad=$((bad + 1)); echo "trial $t: FAILED rc=$rc survivors=$survivors (${prog##*/}, victim $victim, SIG$sig after $delay_ms ms)"; cat "$tmp/out"
  else
    awk -v k="$kill_ns" '/^mix: ok PE/ { for (i = 1; i < NF; ++i) { if ($i == "detect_ns" && $(i+1) > 0) print ($(i+1) - k) / 1e6 > "/dev/stderr"; if ($i == "recover_ns" && $(i+1) > 0) print ($(i+1) - k) / 1e6 } }' \
      "$tmp/out" >> "$tmp/recover.$sig" 2>> "$tmp/detect.$sig"
  fi
  if [ -n "$hosts" ] && ! hosts_clean_within 5; then
    bad=$((bad + 1)); echo "trial $t: left on the hosts: $left"
  fi
done
left=$(ls /dev/shm | grep '^tessera-' | grep -v -F -x -f "$tmp/shm_before" || true)
[ -n "$left" ] && { echo "left in /dev/shm: $left"; bad=$((bad + 1)); }
stats() {  # median and p99 of the numbers in $1 (ms)
  sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) { print "none"; exit }
    m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.99 + 0.999)]; if (p == "") p = v[NR];
    printf "median %.1f ms, p99 %.1f ms, max %.1f ms (%d survivors)", m, p, v[NR], NR }'
}
echo "resilience trials ($api${hosts:+, --hosts $hosts}): $trials jobs of $pes PEs ($kills SIGKILL, $stops SIGSTOP with TESSERA_TIMEOUT=$timeout${hosts:+, $losts hosts lost, $links links down}), $hangs hangs, $bad bad"
echo "  SIGKILL -> failed call:             $(stats "$tmp/detect.KILL")"
echo "  SIGKILL -> good call on survivors:   $(stats "$tmp/recover.KILL")"
echo "  SIGSTOP -> failed call:             $(stats "$tmp/detect.STOP")"
echo "  SIGSTOP -> good call on survivors:   $(stats "$tmp/recover.STOP")"
if [ -n "$hosts" ]; then
  echo "  host lost -> failed call:           $(stats "$tmp/detect.HOST")"
  echo "  host lost -> good call on survivors: $(stats "$tmp/recover.HOST")"
  echo "  link down -> failed call:           $(stats "$tmp/detect.LINK")"
  echo "  link down -> good call on survivors: $(stats "$tmp/recover.LINK")"
fi
[ $bad -eq 0 ]
