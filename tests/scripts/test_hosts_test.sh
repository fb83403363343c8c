#!/usr/bin/env bash
# scripts/test-hosts.sh, as the README uses it: `up 2` prints the hosts and the TESSERA_RSH to export, a
# 2-host job (tessera-run --hosts h1,h2) runs one PE in each, `down` leaves nothing (no keeper, no process
# in the hosts' namespaces, no state directory), nothing is ever made in this machine's own network
# namespace, and a keeper killed with SIGKILL still takes its hosts with it. Its own state directory, so a
# user's hosts are left alone. Skips (77) unless root.
#   bash test_hosts_test.sh <build-dir>
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
script=$repo/scripts/test-hosts.sh
# shellcheck source=../hosts/netns.sh disable=SC1091
. "$repo/tests/hosts/netns.sh"
hosts_require_root
# shellcheck source=lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"
state=$tmp/state
th() { timeout 60 "$script" --state "$state" "$@"; }
trap 'th down > /dev/null 2>&1; rm -rf "$tmp"' EXIT

links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)
# The pids and namespaces of what up made, read from the state netns.sh keeps.
made() { cat "$state"/hosts/*.pid "$state"/hosts/*.unshare "$state/keeper.pid" 2>/dev/null; }
ns_ids() { cat "$state"/hosts/*.ns 2>/dev/null | tr '\n' ' '; }
nothing_left() {  # what= the pids and namespace ids to look for
  local p t
  # down returns once it has signalled and waited for the keeper; a process of the hosts that the kernel is
  # still tearing down (a busy machine: the sanitizer pass runs other tests beside this one) gets 5 s.
  for p in $1; do
    for t in $(seq 1 100); do _hosts_alive "$p" || break; sleep 0.05; done
    _hosts_alive "$p" && { echo "pid $p still alive 5 s after down: $(ps -o pid=,stat=,comm= -p "$p")"; return 1; }
  done
  [ -z "$(_hosts_members "$2")" ] || { echo "processes left in the namespaces: $(_hosts_members "$2" | tr '\n' ' ')"; return 1; }
  [ ! -e "$state" ] || { echo "$state is left: $(ls -A "$state")"; return 1; }
}

# 1. up 2: the names and an export line that eval takes.
out=$(th up 2 2> "$tmp/up.err"); rc=$?
echo "$out" | sed 's/^/     | /'
check "up 2 exits 0 (rc $rc; $(cat "$tmp/up.err"))" "[ $rc -eq 0 ]"
check "up 2 names h1 and h2 in a comment line" "echo \"\$out\" | grep -q '^# test hosts up: h1 h2 '"
check "up 2 prints the TESSERA_RSH to export" "echo \"\$out\" | grep -qx \"export TESSERA_RSH='$script --state $state rsh'\""
pids=$(made) ids=$(ns_ids)
alive() { local p k=0; for p in $pids; do _hosts_alive "$p" && k=$((k+1)); done; echo $k; }
# keeper, reaper, and a holder and its unshare process for h1, h2 and the switch
check "the keeper, the reaper, 2 hosts and the switch are running ($(alive) processes)" "[ \$(alive) -eq 8 ]"
th status > "$tmp/st.out" 2>&1; rc=$?
check "status lists h1 and h2 (rc $rc)" "[ $rc -eq 0 ] && grep -q '^  h1 10.231.0.1: ' '$tmp/st.out' && grep -q '^  h2 10.231.0.2: ' '$tmp/st.out'"
check "a second up is refused while hosts are up" "! th up 2 2>&1 | grep -q '^export'"
check "nothing was made in this machine's network namespace" \
  "[ \"\$(ip -o link show | awk -F': ' '{print \$2}' | sort)\" = \"\$links_before\" ] && ! ip -o addr show | grep -q 10.231."

# 2. A 2-host job as the README runs it: one PE in each host.
eval "$out"
run() { timeout 120 "$build/bin/tessera-run" --timeout 100 "$@" > "$tmp/run.out" 2>&1; }
run --hosts h1,h2 "$build/bin/ring_pass"; rc=$?
check "tessera-run --hosts h1,h2 ring_pass exits 0 (rc $rc: $(tail -2 "$tmp/run.out" | tr '\n' ' '))" \
  "[ $rc -eq 0 ] && grep -q 'ring_pass: 2 PEs, .* all data verified' '$tmp/run.out'"
run --hosts h1,h2 --tag-output hostname; rc=$?
check "its PEs run on h1 and h2 ($(tr '\n' ' ' < "$tmp/run.out"))" \
  "[ $rc -eq 0 ] && grep -q 'h1\$' '$tmp/run.out' && grep -q 'h2\$' '$tmp/run.out'"

# 3. down leaves nothing.
th down > "$tmp/down.out" 2>&1; rc=$?
check "down exits 0 (rc $rc: $(cat "$tmp/down.out"))" "[ $rc -eq 0 ]"
check "down leaves no process, namespace member or state" "nothing_left '$pids' '$ids'"
check "status after down: none up, exit 1" "! th status > '$tmp/st.out' && grep -qx 'no test hosts are up' '$tmp/st.out'"

# 4. A keeper killed outright: its hosts go within seconds, and down tidies the rest.
eval "$(th up 1)"
pids=$(made) ids=$(ns_ids)
kill -KILL "$(cat "$state/keeper.pid")"
for _ in $(seq 100); do [ -z "$(_hosts_members "$ids")" ] && break; sleep 0.1; done
check "hosts of a keeper killed by SIGKILL are gone within 10 s" "[ -z \"\$(_hosts_members '$ids')\" ]"
th down > /dev/null 2>&1
check "down after that leaves nothing" "nothing_left '$pids' '$ids'"

# 5. Usage mistakes.
check "up 0 is refused (status 2)" "th up 0 2> /dev/null; [ \$? -eq 2 ]"
check "an unknown command is refused (status 2)" "th start 2> /dev/null; [ \$? -eq 2 ]"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
