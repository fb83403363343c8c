#!/usr/bin/env bash
# test-hosts.sh: test hosts on this one machine, for trying jobs across hosts without a cluster (as root).
#
#   scripts/test-hosts.sh up N        hosts h1..hN (1 to 254); prints their names (a comment line) and the
#                                     TESSERA_RSH to export, so that  eval "$(scripts/test-hosts.sh up 2)"
#                                     brings them up and sets TESSERA_RSH for tessera-run --hosts h1,h2
#   scripts/test-hosts.sh status      the hosts that are up and what runs in them; exit 1 when none are up
#   scripts/test-hosts.sh down        ends everything running in the hosts and removes them
#   scripts/test-hosts.sh link rate=RATE [delay=DELAY]   slows every host's link both ways (tc tbf, e.g.
#                                     rate=1gbit; delay= needs the kernel's netem, and is left out with a
#                                     note when it is missing); rate=off takes the limits away
#   scripts/test-hosts.sh rsh HOST CMD...   the remote shell that TESSERA_RSH names (tests/hosts/rsh on these
#                                     hosts): runs CMD inside HOST in the caller's directory and environment
# Option before the command: --state DIR (default /run/tessera-test-hosts) keeps a second, independent set.
#
# A host is a set of Linux namespaces made by tests/hosts/netns.sh, the one implementation, which this script
# sources (its header says what a host shares with the machine). Traffic never leaves the namespaces: the
# hosts sit on a bridge of their own, 10.231.0.0/24, with no route beyond it, and nothing is created in the
# machine's own network namespace.
#
# Lifetime. netns.sh removes hosts when the shell that made them ends, so `up` starts a keeper: a detached
# shell that brings the hosts up, says so, and waits; `down` ends the keeper, whose exit removes the hosts.
# A keeper killed by any signal, SIGKILL included, still takes its hosts with it (netns.sh's reaper). When
# `up` fails (no root, a step of the setup, no answer in time) nothing is left behind, and the status is 1.
# Exit status: 0, or 1 with one line on stderr saying what failed; 2 for a usage mistake.
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(cd "$here/.." && pwd)
self=$here/$(basename "$0")
# shellcheck source=../tests/hosts/netns.sh
. "$repo/tests/hosts/netns.sh"

state=/run/tessera-test-hosts
die() { echo "test-hosts.sh: $*" >&2; exit 1; }
usage() {
  echo "usage: scripts/test-hosts.sh [--state DIR] up N | status | down | rsh HOST CMD..." >&2
  [ $# -gt 0 ] && echo "test-hosts.sh: $*" >&2
  exit 2
}
if [ "${1:-}" = --state ]; then
  [ $# -ge 2 ] || usage "--state needs a directory"
  state=$(readlink -m "$2"); shift 2
fi
cmd=${1:-}; [ $# -gt 0 ] && shift
hostsdir=$state/hosts            # netns.sh's state directory (NETNS_HOSTS_DIR)
pidfile=$state/keeper.pid
rsh_value() { if [ "$state" = /run/tessera-test-hosts ]; then echo "$self rsh"; else echo "$self --state $state rsh"; fi; }

# The keeper's pid, if it is alive and is a keeper of this state directory (a reused pid is not).
keeper_pid() {
  local p
  p=$(cat "$pidfile" 2>/dev/null) || return 1
  _hosts_alive "$p" && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF -- "--state $state _keep" && echo "$p"
}

# _keep N: the keeper (started by up, never by hand). Its exit, however it comes, takes the hosts down.
keep() {
  trap 'hosts_down; rm -f "$pidfile" "$state/ready"' EXIT
  trap 'exit 143' TERM; trap 'exit 130' INT; trap 'exit 129' HUP
  echo "$BASHPID" > "$pidfile"
  hosts_up "$1" "$hostsdir" || exit 1
  : > "$state/ready"
  # Wait without a child process (nothing to leave behind): a read with a timeout on a FIFO that never has
  # data; the signal traps run between reads.
  mkfifo "$state/keeper.fifo" 2>/dev/null || true
  exec 3<> "$state/keeper.fifo"
  while :; do read -r -t 1 -u 3 _ || true; done
}

up() {
  local n=${1:-} why p deadline
  case "$n" in ''|*[!0-9]*) usage "up needs a number of hosts, 1 to 254 (got '$n')" ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 254 ] || usage "up $n: 1 to 254 hosts"
  why=$(hosts_require_root) || die "cannot make test hosts here: ${why#skipped: }"
  keeper_pid > /dev/null && die "test hosts are already up ($(tr '\n' ' ' < "$hostsdir/hosts" 2>/dev/null)); scripts/test-hosts.sh down first"
  [ -e "$hostsdir" ] && die "$hostsdir is left from hosts whose keeper is gone; scripts/test-hosts.sh down removes it"
  mkdir -p "$state" || die "cannot make $state"
  rm -f "$state/ready" "$state/keeper.log" "$pidfile"
  # Detached (its own session, no terminal) so that it outlives this shell and a Ctrl-C here.
  setsid bash "$self" --state "$state" _keep "$n" < /dev/null > "$state/keeper.log" 2>&1 &
  p=$!
  deadline=$(( $(date +%s) + 30 ))
  while [ ! -e "$state/ready" ]; do
    if ! _hosts_alive "$p"; then
      die "bringing up $n hosts failed: $(tr '\n' ' ' < "$state/keeper.log")"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null
      die "the hosts were not up within 30 s; removed what was made: $(tr '\n' ' ' < "$state/keeper.log")"
    fi
    sleep 0.05
  done
  echo "# test hosts up: $(tr '\n' ' ' < "$hostsdir/hosts")(10.231.0.1-$n, namespaces of this machine; down: scripts/test-hosts.sh down)"
  echo "export TESSERA_RSH='$(rsh_value)'"
}

down() {
  local p deadline
  if p=$(keeper_pid); then
    kill -TERM "$p" 2>/dev/null
    deadline=$(( $(date +%s) + 15 ))
    while _hosts_alive "$p"; do
      [ "$(date +%s)" -ge "$deadline" ] && die "the keeper (pid $p) did not end within 15 s"
      sleep 0.05
    done
  fi
  # A keeper killed outright leaves the removal to netns.sh's reaper, or to this (its manual form).
  if [ -e "$hostsdir" ]; then hosts_down "$hostsdir" || die "could not remove the hosts of $hostsdir"; fi
  rm -f "$pidfile" "$state/ready" "$state/keeper.fifo" "$state/keeper.log"
  rmdir "$state" 2>/dev/null || true
  echo "test hosts down"
}

status() {
  local p h
  if ! p=$(keeper_pid) || [ ! -r "$hostsdir/hosts" ]; then
    echo "no test hosts are up"
    [ -e "$hostsdir" ] && echo "($hostsdir is left from hosts whose keeper is gone; scripts/test-hosts.sh down removes it)"
    return 1
  fi
  echo "test hosts up (keeper pid $p, state $hostsdir):"
  export NETNS_HOSTS_DIR=$hostsdir
  while read -r h; do
    # Not counted: the host's holder and the unshare process above it, which make the host.
    echo "  $h $(cat "$hostsdir/$h.addr"): $(host_pids "$h" | grep -cvxF -e "$(cat "$hostsdir/$h.pid")" \
      -e "$(cat "$hostsdir/$h.unshare")") processes running in it"
  done < "$hostsdir/hosts"
  echo "export TESSERA_RSH='$(rsh_value)'"
}

case "$cmd" in
  up) [ $# -eq 1 ] || usage "up takes one number"; up "$1" ;;
  down) [ $# -eq 0 ] || usage "down takes no arguments"; down ;;
  status) [ $# -eq 0 ] || usage "status takes no arguments"; status ;;
  rsh) NETNS_HOSTS_DIR=$hostsdir exec "$repo/tests/hosts/rsh" "$@" ;;
  link)
    keeper_pid >/dev/null && [ -r "$hostsdir/hosts" ] || die "no test hosts are up (scripts/test-hosts.sh up N)"
    [ $# -ge 1 ] || usage "link takes rate=RATE [delay=DELAY]"
    NETNS_HOSTS_DIR=$hostsdir hosts_link "$@"
    rc=$?
    [ $rc = 1 ] && exit 1
    exit 0 ;;
  _keep) keep "$1" ;;
  -h|--help) echo "usage: scripts/test-hosts.sh [--state DIR] up N | status | down | link rate=RATE [delay=D] | rsh HOST CMD..."; exit 0 ;;
  '') usage ;;
  *) usage "unknown command '$cmd'" ;;
esac
