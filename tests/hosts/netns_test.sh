#!/usr/bin/env bash
# The namespace-host harness (netns.sh, rsh) isolates what multi-host tests rely on: with 3 hosts, each has
# its own host name, /dev/shm, SysV IPC, loopback and abstract Unix sockets; the hosts reach one another
# over TCP on 10.231.0.x; rsh behaves as ssh would; and hosts_down leaves no process, namespace, link or
# state directory behind, and nothing changed in the root namespace. Skips (77) unless run as root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns.sh
. "$here/netns.sh"
hosts_require_root
py=/usr/bin/python3
[ -x $py ] || { echo "skipped: $py is missing (the listeners of this test are Python)"; exit 77; }
trap hosts_down EXIT
trap 'exit 130' INT      # exit runs the EXIT trap; returning would resume the checks without hosts
trap 'exit 143' TERM

fails=0 passes=0
check() { if eval "$2"; then passes=$((passes+1)); echo "ok   $1"; else fails=$((fails+1)); echo "FAIL $1"; fi; }
ns_of() { readlink "/proc/$1/ns/$2"; }
rsh=$here/rsh
probe=tessera-netns-probe-$$

# One connection, answered with the host name of the listener. Listens on tcp ADDR PORT or on the abstract
# Unix socket NAME ("unix NAME -"); creates READY once listening; gives up after 20 s without a client.
listener='
import socket, sys
kind, addr, port, ready = sys.argv[1:]
if kind == "tcp":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((addr, int(port)))
else:
    s = socket.socket(socket.AF_UNIX); s.bind("\0" + addr)
s.listen(); s.settimeout(20)
open(ready, "w").close()
c, _ = s.accept(); c.sendall(socket.gethostname().encode()); c.close()'
# Prints what the listener at (tcp ADDR PORT | unix NAME -) answers; fails if nothing listens there.
client='
import socket, sys
kind, addr, port = sys.argv[1:]
if kind == "tcp":
    s = socket.create_connection((addr, int(port)), timeout=5)
else:
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect("\0" + addr)
print(s.recv(64).decode())'
listen() {   # listen HOST KIND ADDR PORT: starts a listener in HOST, returns once it listens
  local ready=$NETNS_HOSTS_DIR/ready.$1.$2.$3
  host_exec "$1" $py -c "$listener" "$2" "$3" "$4" "$ready" &
  for _ in $(seq 1 250); do [ -e "$ready" ] && return 0; sleep 0.02; done
  echo "listener $* did not start within 5 s"; return 1
}
answer() { local h=$1; shift; if [ "$h" = root ]; then $py -c "$client" "$@"; else host_exec "$h" $py -c "$client" "$@"; fi; }

# What the root namespace looks like before, compared at the end (read by check's eval).
# shellcheck disable=SC2034
{ links_before=$(ip -o link show); netns_before=$(ip netns list); hostname_before=$(hostname); }

hosts_up 3
dir=$NETNS_HOSTS_DIR
declare -A pid
for h in switch h1 h2 h3; do pid[$h]=$(cat "$dir/$h.pid"); pid[$h.unshare]=$(cat "$dir/$h.unshare"); done
pid[reaper]=$(cat "$dir/reaper.pid")
check "state directory lists h1 h2 h3" "[ \"\$(tr '\n' ' ' < '$dir/hosts')\" = 'h1 h2 h3 ' ]"
check "h2's address is 10.231.0.2" "[ \"\$(cat '$dir/h2.addr')\" = 10.231.0.2 ]"

# (a) Host names.
for h in h1 h2 h3; do check "$h's hostname is $h" "[ \"\$(host_exec $h hostname)\" = $h ]"; done
check "a host is found by its address too (10.231.0.3 is h3)" "[ \"\$(host_exec 10.231.0.3 hostname)\" = h3 ]"
check "host names resolve inside a host (h1 looks up h2)" \
      "host_exec h1 getent hosts h2 | grep -qx '10.231.0.2 *h2'"
check "the root's hostname is unchanged" "[ \"\$(hostname)\" = \"\$hostname_before\" ]"

# (b) /dev/shm and SysV IPC.
host_exec h1 sh -c "echo x > /dev/shm/$probe"
check "h1 sees its own /dev/shm file" "host_exec h1 test -e /dev/shm/$probe"
check "h2 does not see h1's /dev/shm file" "host_exec h2 test ! -e /dev/shm/$probe"
check "the root does not see h1's /dev/shm file" "[ ! -e /dev/shm/$probe ]"
check "a host's /dev/shm is a tmpfs with mode 1777" \
      "[ \"\$(host_exec h2 stat -f -c %T /dev/shm) \$(host_exec h2 stat -c %a /dev/shm)\" = 'tmpfs 1777' ]"
host_exec h1 ipcmk -Q > /dev/null
check "a SysV message queue made in h1 is seen in h1 only" \
      "[ \"\$(host_exec h1 ipcs -q | grep -c '^0x') \$(host_exec h2 ipcs -q | grep -c '^0x')\" = '1 0' ]"

# (c) TCP between hosts; loopback and abstract Unix sockets stay inside their host.
listen h2 tcp 10.231.0.2 5731
listen h3 tcp 10.231.0.3 5731
check "h1 reaches h2 over TCP at 10.231.0.2" "[ \"\$(answer h1 tcp 10.231.0.2 5731)\" = h2 ]"
check "h1 reaches h3 over TCP at 10.231.0.3" "[ \"\$(answer h1 tcp 10.231.0.3 5731)\" = h3 ]"
listen h2 tcp 127.0.0.1 5732
check "h1 cannot reach h2's loopback listener" "! answer h1 tcp 127.0.0.1 5732 2>/dev/null"
check "the root cannot reach h2's loopback listener" "! answer root tcp 127.0.0.1 5732 2>/dev/null"
check "h2 reaches its own loopback listener" "[ \"\$(answer h2 tcp 127.0.0.1 5732)\" = h2 ]"
listen h2 unix "$probe" -
check "h1 cannot reach h2's abstract Unix socket" "! answer h1 unix $probe - 2>/dev/null"
check "the root cannot reach h2's abstract Unix socket" "! answer root unix $probe - 2>/dev/null"
check "h2 reaches its own abstract Unix socket" "[ \"\$(answer h2 unix $probe -)\" = h2 ]"
wait   # the listeners, each done after its one connection

# (d) Namespaces: each host's differ from the root's and from the other hosts'; host_exec enters them.
for h in h1 h2 h3; do
  for t in net ipc uts mnt; do
    check "$h's $t namespace is not the root's" "[ \"\$(ns_of ${pid[$h]} $t)\" != \"\$(ns_of $$ $t)\" ]"
  done
  check "host_exec $h runs in $h's network namespace" \
        "[ \"\$(host_exec $h readlink /proc/self/ns/net)\" = \"\$(ns_of ${pid[$h]} net)\" ]"
done
check "the switch's network namespace is its own" "[ \"\$(ns_of ${pid[switch]} net)\" != \"\$(ns_of $$ net)\" ]"
check "the three hosts' network and IPC namespaces are distinct" \
      "[ \$(for h in h1 h2 h3; do ns_of \${pid[\$h]} net; ns_of \${pid[\$h]} ipc; done | sort -u | wc -l) -eq 6 ]"
check "host_exec keeps the working directory" "[ \"\$(host_exec h1 pwd)\" = \"\$PWD\" ]"
check "host_exec passes the status through (4)" "host_exec h1 sh -c 'exit 4'; [ \$? -eq 4 ]"
check "host_exec on an unknown host: 125 and says so" \
      "host_exec h9 true 2>'$dir/err'; [ \$? -eq 125 ] && grep -q 'no host h9' '$dir/err'"

# (e) rsh, as a launcher would use it.
check "rsh h2 'echo \$(hostname)' prints h2" "[ \"\$('$rsh' h2 'echo \$(hostname)')\" = h2 ]"
check "rsh passes the status through (exit 3)" "'$rsh' h2 'exit 3'; [ \$? -eq 3 ]"
check "rsh joins its words as ssh does" "[ \"\$('$rsh' h3 echo a '\$(hostname)' b)\" = 'a h3 b' ]"
check "rsh by address" "[ \"\$('$rsh' 10.231.0.1 hostname)\" = h1 ]"
check "rsh passes stdin through" "[ \"\$(printf 'a b\n' | '$rsh' h3 'read x y; echo \$y')\" = b ]"
check "rsh passes stderr through" "[ \"\$('$rsh' h2 'echo oops >&2' 2>&1 >/dev/null)\" = oops ]"
check "rsh to an unknown host: 255 and says so" \
      "'$rsh' h7 true 2>'$dir/err'; [ \$? -eq 255 ] && grep -q 'no host h7' '$dir/err'"
check "rsh without NETNS_HOSTS_DIR: 255" "env -u NETNS_HOSTS_DIR '$rsh' h1 true 2>/dev/null; [ \$? -eq 255 ]"

# (f) hosts_down leaves nothing behind.
ids=$(cat "$dir"/*.ns)
hosts_down
check "hosts_down removes the state directory" "[ ! -e '$dir' ]"
check "hosts_down unsets NETNS_HOSTS_DIR" "[ -z \"\${NETNS_HOSTS_DIR:-}\" ]"
alive=""
for k in "${!pid[@]}"; do _hosts_alive "${pid[$k]}" && alive="$alive $k=${pid[$k]}"; done
check "no holder, unshare or reaper process remains ($alive)" "[ -z '$alive' ]"
members=$(_hosts_members "$(echo "$ids" | tr '\n' ' ')")
check "no process remains in the hosts' namespaces ($members)" "[ -z '$members' ]"
check "lsns lists none of the hosts' namespaces" \
      "! lsns -n -o NS,TYPE | awk '{print \$2\":[\"\$1\"]\"}' | grep -qxF -f <(echo \"\$ids\")"
check "ip netns lists the same as before" "[ \"\$(ip netns list)\" = \"\$netns_before\" ]"
check "the root's links are the same as before (no veth, no bridge)" "[ \"\$(ip -o link show)\" = \"\$links_before\" ]"
check "the root's hostname is unchanged" "[ \"\$(hostname)\" = \"\$hostname_before\" ]"
check "hosts_down again does nothing and succeeds" "hosts_down"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
