# shellcheck shell=bash disable=SC2016,SC2119  # holder scripts are single-quoted on purpose; hosts_down without DIR
# Namespace hosts: several "hosts" on this one machine, each a set of Linux namespaces (network, UTS, IPC,
# mount) joined by a bridge, so that multi-host tests (transports, a TCP bootstrap, a launcher with --hosts)
# run across real network stacks. Sourced, not run:
#
#   . tests/hosts/netns.sh
#   hosts_require_root                     # or the test skips (exit 77)
#   trap hosts_down EXIT INT TERM          # every way out tears the hosts down
#   hosts_up 3                             # h1 h2 h3 at 10.231.0.1 .2 .3; exports NETNS_HOSTS_DIR
#   host_exec h2 some-program args         # runs inside h2
#   hosts_link rate=200mbit [delay=2ms]    # every host's link slowed (tc tbf; delay needs netem)
#   TESSERA_RSH=tests/hosts/rsh ...        # ssh-like access for a launcher (rsh HOST CMD...)
#
# For people rather than tests, scripts/test-hosts.sh (up N, status, down) keeps such hosts up between
# commands on top of this file.
#
# hosts_down is idempotent, so running it from a signal trap and again from the EXIT trap is fine. Bash
# resumes the script after an INT/TERM trap returns (the hosts are then gone, so the next host command
# fails); a script that should stop there at once installs instead
#   trap hosts_down EXIT; trap 'exit 130' INT; trap 'exit 143' TERM
# Traps are not enough on their own: SIGKILL runs none, and bash 5.2 can drop a SIGINT (one that arrives
# while it parses a $(...) makes the trap's own text fail to parse; one that arrives while it waits for a
# child that then exits normally is taken as handled by that child). So hosts_up also starts a reaper that
# tears the hosts down within a second or so of the shell that made them ending.
#
# What a host is. A holder process made by `unshare --net --uts --ipc --mount --propagation private` that
# mounts a private tmpfs on /dev/shm, bind-mounts a generated /etc/hosts naming every host, sets its host
# name, brings lo up and sleeps; everything else enters its namespaces with nsenter. Not isolated: the PID
# namespace (ps shows every process, and a pid is unique machine-wide; a PID namespace would make nsenter
# fork, and /proc disagree with the processes seen), and every file system but /dev/shm and /etc/hosts
# (so /tmp, including path-named Unix sockets, is shared; abstract Unix sockets belong to the network
# namespace and are not). Mounts made in the root namespace after hosts_up do not appear inside.
#
# The network. A "switch" holder with only a network namespace holds the bridge br0; host K's eth0 is one
# end of a veth pair made inside the switch namespace, the other end a port of br0, and has 10.231.0.K/24.
# Hosts have no route beyond that subnet. Nothing is ever created in the root network namespace.
#
# State directory ($NETNS_HOSTS_DIR): hosts (names, one a line, written once every host is wired),
# hK.pid (the holder's pid, which nsenter targets), hK.addr, hK.ns (its net and mount namespace ids),
# hK.unshare (the unshare process above the holder), hK.log (the holder's output), the same switch.* files,
# etc_hosts, reaper.pid, reaper.fifo, and a marker that makes hosts_down willing to remove the directory.
#
# Every function writes what failed to stderr, prefixed with its name, and returns non-zero; none changes
# the caller's shell options, and each behaves the same with or without the caller's set -e. hosts_up and
# hosts_down must run in the caller's own shell (not in $(...)): hosts_down tears down only hosts this
# shell brought up, never ones named by an inherited NETNS_HOSTS_DIR.

_hosts_subnet=10.231.0          # hosts are .1 .. .N of 10.231.0.0/24
_hosts_max=254
_hosts_ready_s=5                 # holders and the switch must be set up within this many seconds
_hosts_marker=.tessera-hosts
_hosts_owned_dir=                # the state directory this shell brought up, if any

_hosts_err() { echo "$*" >&2; }

# True while pid exists and is not a zombie.
_hosts_alive() {
  local st
  read -r st 2>/dev/null < "/proc/$1/stat" || return 1
  st=${st##*) }            # past "pid (comm) "; comm may hold spaces
  [ "${st%% *}" != Z ]
}
# Parent pid of pid, or nothing.
_hosts_ppid() {
  local st
  read -r st 2>/dev/null < "/proc/$1/stat" || return 0
  st=${st##*) }
  st=${st#* }
  echo "${st%% *}"
}

# _hosts_pid CALLER NAME: prints the holder pid of host NAME (a name or its address) of $NETNS_HOSTS_DIR,
# after checking that the holder is still the process that holds that host's namespaces.
_hosts_pid() {
  local caller=$1 want=$2 dir=${NETNS_HOSTS_DIR:-} name addr pid ns
  if [ -z "$dir" ]; then
    _hosts_err "$caller: NETNS_HOSTS_DIR is not set: no hosts are up (hosts_up makes them)"; return 1
  fi
  if [ ! -r "$dir/hosts" ]; then
    _hosts_err "$caller: $dir/hosts is missing: NETNS_HOSTS_DIR=$dir is not a hosts state directory, or its hosts are down"
    return 1
  fi
  while read -r name; do
    addr=$(cat "$dir/$name.addr" 2>/dev/null) || addr=
    [ "$want" = "$name" ] || [ "$want" = "$addr" ] || continue
    pid=$(cat "$dir/$name.pid" 2>/dev/null) || { _hosts_err "$caller: host $name has no holder pid in $dir"; return 1; }
    ns=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || ns=
    if [ -z "$ns" ] || ! grep -qxF "$ns" "$dir/$name.ns"; then
      _hosts_err "$caller: host $name's holder (pid $pid) is gone; its namespaces with it"; return 1
    fi
    echo "$pid"; return 0
  done < "$dir/hosts"
  _hosts_err "$caller: no host $want in $dir (hosts: $(tr '\n' ' ' < "$dir/hosts"))"
  return 1
}

# _hosts_members "NSID...": pids of the processes in any of the given namespaces (net:[...] or mnt:[...],
# space-separated in one word, as the ids look like glob patterns).
# One find reads every link: a readlink per process would fork hundreds of times per call.
_hosts_members() {
  { find /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt -maxdepth 0 -printf '%l %p\n' 2>/dev/null || true; } |
    awk -v ids=" $1 " 'index(ids, " " $1 " ") { split($2, p, "/"); print p[3] }' | sort -un
}

# _hosts_start DIR NAME FLAGS SCRIPT: starts a holder running SCRIPT (sh) in new namespaces FLAGS, with its
# output in DIR/NAME.log. SCRIPT gets DIR and NAME as $1 and $2 and ends by writing its pid to DIR/NAME.pid,
# the sign that its setup is done. --kill-child: the holder dies with unshare, whichever is killed first.
_hosts_start() {
  local dir=$1 name=$2 flags=$3 script=$4 pid
  # shellcheck disable=SC2086  # flags are words
  unshare $flags --kill-child sh -c "$script" holder "$dir" "$name" < /dev/null > "$dir/$name.log" 2>&1 &
  pid=$!
  echo "$pid" > "$dir/$name.unshare"
  disown "$pid" 2>/dev/null || true   # no "Killed" notice from the caller's shell when hosts_down ends it
}

# hosts_up N [DIR]: brings up hosts h1..hN (see the top of this file) with state in DIR (default: a new
# temporary directory; DIR, if given, must not exist or be empty) and exports NETNS_HOSTS_DIR=DIR.
# On failure, says which step failed, tears down what it made and returns 1.
hosts_up() { _hosts_up "$@" || return 1; }   # called in a list: errexit off in the body, whatever the caller set
_hosts_up() {
  local n=${1:-} dir=${2:-} k name pid deadline pending ns
  case "$n" in ''|*[!0-9]*) _hosts_err "hosts_up: usage: hosts_up N [DIR] (N hosts, 1 to $_hosts_max); got '$n'"; return 1 ;; esac
  if [ "$n" -lt 1 ] || [ "$n" -gt "$_hosts_max" ]; then
    _hosts_err "hosts_up: $n hosts asked; the subnet $_hosts_subnet.0/24 holds 1 to $_hosts_max"; return 1
  fi
  if [ -n "$_hosts_owned_dir" ]; then
    _hosts_err "hosts_up: hosts are already up in $_hosts_owned_dir; hosts_down first"; return 1
  fi
  if [ -z "$dir" ]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-hosts.XXXXXX") || { _hosts_err "hosts_up: cannot make a state directory"; return 1; }
  else
    mkdir -p "$dir" || { _hosts_err "hosts_up: cannot make the state directory $dir"; return 1; }
    if [ -n "$(ls -A "$dir")" ]; then _hosts_err "hosts_up: state directory $dir is not empty"; return 1; fi
    dir=$(cd "$dir" && pwd) || return 1
  fi
  : > "$dir/$_hosts_marker" || { _hosts_err "hosts_up: cannot write to $dir"; return 1; }
  _hosts_owned_dir=$dir
  export NETNS_HOSTS_DIR=$dir

  # 0. The reaper (see the top of this file). It ignores the signals a terminal or timeout sends the whole
  #    process group, so that it outlives this shell, and looks every second whether this shell is still
  #    there. Its wait is a read with a timeout on a FIFO it opens for both reading and writing, which
  #    never has data nor ends: no sleep process to leave behind when it is killed in the middle.
  local owner=$BASHPID
  mkfifo "$dir/reaper.fifo" || { _hosts_err "hosts_up: cannot make $dir/reaper.fifo"; hosts_down; return 1; }
  ( trap '' INT TERM HUP
    exec 3<> "$dir/reaper.fifo"
    while _hosts_alive "$owner"; do read -r -t 1 -u 3 _ || true; done
    hosts_down "$dir" ) < /dev/null > /dev/null 2>&1 &
  echo $! > "$dir/reaper.pid"
  disown $! 2>/dev/null || true

  # The /etc/hosts every host sees, so that host names resolve inside any host. (The state directory's
  # hosts file comes last, once every host is wired: lookups never see a host without its files.)
  if ! {
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
    for k in $(seq 1 "$n"); do printf '%s.%s\th%s\n' "$_hosts_subnet" "$k" "$k"; done
  } > "$dir/etc_hosts"; then
    _hosts_err "hosts_up: cannot write $dir/etc_hosts"; hosts_down; return 1
  fi

  # 1. The holders, all at once; each says it is ready by writing its pid.
  _hosts_start "$dir" switch "--net" '
    set -e
    ip link set lo up
    ip link add name br0 type bridge
    ip link set br0 up
    echo $$ > "$1/$2.pid.tmp" && mv "$1/$2.pid.tmp" "$1/$2.pid"
    exec sleep infinity'
  for k in $(seq 1 "$n"); do
    _hosts_start "$dir" "h$k" "--net --uts --ipc --mount --propagation private" '
      set -e
      mount -t tmpfs -o mode=1777,nosuid,nodev tessera-shm /dev/shm
      mount --bind "$1/etc_hosts" /etc/hosts
      hostname "$2"
      ip link set lo up
      echo $$ > "$1/$2.pid.tmp" && mv "$1/$2.pid.tmp" "$1/$2.pid"
      exec sleep infinity'
  done

  # 2. Wait until every holder is set up, or one has died, or the deadline passes.
  deadline=$(( $(date +%s%N) + _hosts_ready_s * 1000000000 ))
  while :; do
    pending=
    for name in switch $(seq -f 'h%g' 1 "$n"); do
      [ -s "$dir/$name.pid" ] && continue
      if ! _hosts_alive "$(cat "$dir/$name.unshare")"; then
        _hosts_err "hosts_up: $name's holder exited during its setup: $(tr '\n' ' ' < "$dir/$name.log")"
        hosts_down; return 1
      fi
      pending="$pending $name"
    done
    [ -z "$pending" ] && break
    if [ "$(date +%s%N)" -gt "$deadline" ]; then
      _hosts_err "hosts_up: not set up within ${_hosts_ready_s} s:$pending"
      hosts_down; return 1
    fi
    sleep 0.02
  done
  for name in switch $(seq -f 'h%g' 1 "$n"); do
    pid=$(cat "$dir/$name.pid")
    # The switch shares the root's mount namespace: only its network namespace is its own.
    if [ "$name" = switch ]; then ns=$(readlink "/proc/$pid/ns/net")
    else ns=$(readlink "/proc/$pid/ns/net" && readlink "/proc/$pid/ns/mnt"); fi || {
      _hosts_err "hosts_up: $name's holder (pid $pid) died right after its setup: $(tr '\n' ' ' < "$dir/$name.log")"
      hosts_down; return 1
    }
    echo "$ns" > "$dir/$name.ns"
  done

  # 3. Wire each host to the switch: the veth pair is made inside the switch namespace, its peer moved
  #    straight into the host, so no link ever exists in the root namespace.
  local sw; sw=$(cat "$dir/switch.pid")
  for k in $(seq 1 "$n"); do
    name=h$k
    pid=$(cat "$dir/$name.pid")
    if ! nsenter -t "$sw" --net ip link add name "veth-$name" type veth peer name eth0 netns "$pid" ||
       ! nsenter -t "$sw" --net ip link set "veth-$name" master br0 ||
       ! nsenter -t "$sw" --net ip link set "veth-$name" up; then
      _hosts_err "hosts_up: cannot connect $name (pid $pid) to the switch (pid $sw)"; hosts_down; return 1
    fi
    if ! nsenter -t "$pid" --net ip addr add "$_hosts_subnet.$k/24" dev eth0 ||
       ! nsenter -t "$pid" --net ip link set eth0 up; then
      _hosts_err "hosts_up: cannot give $name (pid $pid) its address $_hosts_subnet.$k/24"; hosts_down; return 1
    fi
    echo "$_hosts_subnet.$k" > "$dir/$name.addr"
  done
  seq -f 'h%g' 1 "$n" > "$dir/hosts"
}

# host_exec NAME CMD...: runs CMD inside host NAME (h2, or its address 10.231.0.2) with the caller's
# environment and working directory, and returns CMD's status; 125 if NAME is not a host that is up.
host_exec() {
  local name=${1:-} pid
  if [ $# -lt 2 ]; then _hosts_err "host_exec: usage: host_exec HOST CMD..."; return 125; fi
  shift
  pid=$(_hosts_pid host_exec "$name") || return 125
  nsenter -t "$pid" --net --uts --ipc --mount --wd="$PWD" -- "$@"
}

# hosts_link rate=RATE [delay=DELAY] | rate=off: slows every host's link to the switch, both ways: a token bucket
# (tc tbf: RATE as tc writes it, 1gbit, 200mbit) on the host's eth0 and on its port of the switch, and with
# delay=, a netem delay in front of it. Kernels without the netem module have no delay: hosts_link then says
# so on stderr and returns 2 with the rate limits in place. Returns 1 if tc
# refuses the rate. rate=off takes the limits away; they go away with the hosts too.
hosts_link() {
  local dir=${NETNS_HOSTS_DIR:-} rate="" delay="" arg name pid sw where status=0
  for arg in "$@"; do
    case $arg in
      rate=*) rate=${arg#rate=} ;;
      delay=*) delay=${arg#delay=} ;;
      *) _hosts_err "hosts_link: unknown argument '$arg' (rate=RATE [delay=DELAY])"; return 1 ;;
    esac
  done
  [ -n "$rate" ] || { _hosts_err "hosts_link: rate= is required (e.g. rate=1gbit, or rate=off)"; return 1; }
  [ -n "$dir" ] && [ -f "$dir/hosts" ] || { _hosts_err "hosts_link: no hosts are up"; return 1; }
  if [ "$rate" = off ]; then  # back to the plain links
    sw=$(cat "$dir/switch.pid")
    while IFS= read -r name; do
      nsenter -t "$(cat "$dir/$name.pid")" --net tc qdisc del dev eth0 root 2>/dev/null
      nsenter -t "$sw" --net tc qdisc del dev "veth-$name" root 2>/dev/null
    done < "$dir/hosts"
    return 0
  fi
  sw=$(cat "$dir/switch.pid")
  # netem is a module some kernels lack: tried once on the switch's first port, then taken away again.
  if [ -n "$delay" ]; then
    if nsenter -t "$sw" --net tc qdisc replace dev veth-h1 root netem delay "$delay" 2>/dev/null; then
      nsenter -t "$sw" --net tc qdisc del dev veth-h1 root 2>/dev/null
    else
      _hosts_err "hosts_link: this kernel has no netem (sch_netem): links limited to $rate without the $delay delay"
      delay="" status=2
    fi
  fi
  # tbf needs a burst of at least rate/HZ; 256 KiB holds a 10 Gbit/s rate at HZ=1000 and stays a small
  # share of a second at 100 Mbit/s.
  local tbf=(tbf rate "$rate" burst 256kb latency 100ms)
  while IFS= read -r name; do
    pid=$(cat "$dir/$name.pid")
    # the host's side (what it sends) and the switch's port to it (what it receives)
    local ns dev
    for where in "$pid:eth0" "$sw:veth-$name"; do
      ns=${where%%:*} dev=${where#*:}
      if [ -n "$delay" ]; then
        nsenter -t "$ns" --net tc qdisc replace dev "$dev" root handle 1: netem delay "$delay" &&
          nsenter -t "$ns" --net tc qdisc replace dev "$dev" parent 1:1 handle 10: "${tbf[@]}"
      else
        nsenter -t "$ns" --net tc qdisc replace dev "$dev" root "${tbf[@]}"
      fi || { _hosts_err "hosts_link: tc refused rate=$rate${delay:+ delay=$delay} on $name's $dev"; return 1; }
    done
  done < "$dir/hosts"
  return $status
}

# host_members NAME: the processes inside host NAME but the host's own (its holder and the unshare process
# above it), one pid per line: what jobs started there.
host_members() {
  local dir=${NETNS_HOSTS_DIR:-}
  host_pids "$1" | grep -vxF -e "$(cat "$dir/$1.pid")" -e "$(cat "$dir/$1.unshare")"
}

# hosts_leftovers: what jobs left on the hosts that are still alive, one line each: processes
# ("h2: 1234 pe_barrier_loop") and Tessera's /dev/shm objects ("h2: /dev/shm/tessera-..."); nothing when clean.
hosts_leftovers() {
  local dir=${NETNS_HOSTS_DIR:-} h p
  [ -n "$dir" ] && [ -f "$dir/hosts" ] || return 0
  while IFS= read -r h; do
    _hosts_alive "$(cat "$dir/$h.pid")" || continue
    for p in $(host_members "$h"); do echo "$h: $p $(cat "/proc/$p/comm" 2>/dev/null)"; done
    host_exec "$h" sh -c 'ls /dev/shm' | sed -n "s|^tessera-|$h: /dev/shm/tessera-|p"
  done < "$dir/hosts"
}

# hosts_clean_within LIMIT_S: true once hosts_leftovers finds nothing, polling for up to LIMIT_S seconds; sets
# `left` to what it found last.
hosts_clean_within() {
  local end=$(( $(date +%s%N) + $1 * 1000000000 ))
  while :; do
    left=$(hosts_leftovers)
    [ -z "$left" ] && return 0
    [ "$(date +%s%N)" -ge "$end" ] && return 1
    sleep 0.05
  done
}

# hosts_down [DIR]: kills every process inside the hosts and the switch (holders included), which frees
# their namespaces and the links in them, then removes the state directory. Without DIR, acts on the hosts
# this shell brought up, and does nothing if there are none; DIR names another shell's hosts (manual
# cleanup). Idempotent. Returns 1, keeping the directory, if a process would not die.
# shellcheck disable=SC2120  # DIR is for manual cleanup; this file calls it without
# host_pids NAME: the processes running in host NAME (its network or mount namespace), one pid per line
# (the hosts share the PID namespace, so pgrep inside a host sees every host's processes).
host_pids() {
  local dir=${NETNS_HOSTS_DIR:-}
  [ -n "$dir" ] && [ -f "$dir/$1.ns" ] || { _hosts_err "host_pids: no host $1"; return 1; }
  _hosts_members "$(tr '\n' ' ' < "$dir/$1.ns")"   # its net and mount ids, one line
}

hosts_down() { _hosts_down "$@" || return 1; }   # errexit off in the body: cleanup goes on past a failure
_hosts_down() {
  local dir=${1:-$_hosts_owned_dir} ids="" f p pids left deadline sig
  [ -n "$dir" ] || return 0
  if [ ! -d "$dir" ]; then
    [ "$dir" = "$_hosts_owned_dir" ] && { _hosts_owned_dir=; unset NETNS_HOSTS_DIR; }
    return 0
  fi
  if [ ! -e "$dir/$_hosts_marker" ]; then
    _hosts_err "hosts_down: $dir is not a hosts state directory (no $_hosts_marker); leaving it"; return 1
  fi
  # The namespaces to empty: those recorded once each holder was set up, and those of every unshare
  # process still alive (a holder stopped in its setup may have children inside already). An unshare
  # process is recognised by name, so that a reused pid is left alone. Never the namespaces of this shell
  # or of init: an id of theirs would make every process a member.
  local ours=" " found=() all
  for f in /proc/$BASHPID/ns/net /proc/$BASHPID/ns/mnt /proc/1/ns/net /proc/1/ns/mnt; do  # init's may be unreadable
    p=$(readlink "$f" 2>/dev/null) && ours="$ours$p "
  done
  all=$(cat "$dir"/*.ns 2>/dev/null)
  pids=
  for f in "$dir"/*.unshare; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = unshare ] || continue
    pids="$pids $p"
    all="$all $(readlink "/proc/$p/ns/net" "/proc/$p/ns/mnt" 2>/dev/null)"
  done
  read -r -a found <<< "${all//$'\n'/ }"   # one line; ids such as net:[4026532180] must not meet pathname expansion
  for p in "${found[@]}"; do
    case "$ours" in *" $p "*) ;; *) ids="$ids $p" ;; esac
  done
  # The reaper, unless this is the reaper: it is this shell's child, which a reused pid would not be.
  p=$(cat "$dir/reaper.pid" 2>/dev/null) || p=
  if [ -n "$p" ] && [ "$p" != "$BASHPID" ] && [ "$(_hosts_ppid "$p")" = "$BASHPID" ]; then
    kill -KILL "$p" 2>/dev/null
  fi
  # TERM first, so that programs in the hosts may end cleanly; KILL what is left after a second.
  deadline=$(( $(date +%s%N) + 1000000000 ))
  sig=TERM
  while :; do
    left="$pids $(_hosts_members "$ids" | tr '\n' ' ')"
    pids=
    for p in $left; do _hosts_alive "$p" && pids="$pids $p"; done
    [ -z "$pids" ] && break
    if [ "$(date +%s%N)" -gt "$deadline" ]; then
      if [ $sig = KILL ]; then
        _hosts_err "hosts_down: processes still in the hosts of $dir after SIGKILL:$pids; keeping $dir"
        return 1
      fi
      sig=KILL
      deadline=$(( $(date +%s%N) + 5000000000 ))
    fi
    # shellcheck disable=SC2086
    kill -s $sig $pids 2>/dev/null || true
    sleep 0.05
  done
  rm -rf "$dir" || { _hosts_err "hosts_down: cannot remove $dir"; return 1; }
  if [ "$dir" = "$_hosts_owned_dir" ]; then _hosts_owned_dir=; unset NETNS_HOSTS_DIR; fi
  return 0
}

# hosts_require_root: ends the caller with status 77 (ctest's skip) and "skipped: <reason>" unless this
# process can make namespace hosts: root, the tools present, and the kernel letting it make the namespaces,
# a tmpfs, a bridge and a veth pair (tried inside a throwaway network namespace).
hosts_require_root() {
  local why="" c out
  if [ "$(id -u)" -ne 0 ]; then
    why="not root (namespace hosts need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
  else
    for c in unshare nsenter ip mount hostname sleep; do
      command -v "$c" > /dev/null || { why="$c is not installed"; break; }
    done
  fi
  if [ -z "$why" ] && ! out=$(unshare --net --uts --ipc --mount --propagation private --fork sh -c '
        mount -t tmpfs tmpfs /dev/shm && hostname tessera-probe &&
        ip link add name probe-br type bridge && ip link add name probe-a type veth peer name probe-b' 2>&1); then
    why="cannot make namespaces, a bridge or a veth pair here: $(echo "$out" | tr '\n' ' ')"
  fi
  if [ -n "$why" ]; then echo "skipped: $why"; exit 77; fi
}
