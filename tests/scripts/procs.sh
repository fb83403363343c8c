# Sourced by tests that start PEs as plain background processes (tcp_bootstrap_test.sh,
# tests/hosts/tcp_hosts_test.sh): waiting for them under a deadline.
# wait_all SECONDS PID...: exit statuses in rcs[], in order; whatever still runs after SECONDS is killed
# (and then fails the checks through its status 137). No watchdog process: one would outlive the test
# holding its output open.
wait_all() {
  local secs=$1
  shift
  local deadline=$(( $(date +%s%N) + secs * 1000000000 ))
  while :; do
    local alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    if [ "$(date +%s%N)" -ge $deadline ]; then kill -9 "$@" 2>/dev/null; break; fi
    sleep 0.02
  done
  rcs=()
  for p in "$@"; do
    wait "$p" 2>/dev/null
    rcs+=($?)
  done
}
