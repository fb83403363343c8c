#!/usr/bin/env bash
# Sessions across two namespace hosts (tests/hosts/netns.sh): bench/session_cost.c, small puts and a quiet
# with and without a session, at 8 B, 64 B and 512 B, alternated in one run; and on one host for reference.
#   bash bench/session_compare.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(mktemp -d)
"$build/bin/tessera-cc" -O2 "$root/bench/session_cost.c" -o "$out/session_cost"
# shellcheck source=../tests/hosts/netns.sh disable=SC1091
. "$root/tests/hosts/netns.sh"
hosts_require_root
trap 'hosts_down; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_up 2
export TESSERA_RSH=$root/tests/hosts/rsh
for bytes in 8 64 512; do
  echo "2 hosts x 1 PE:"
  "$build/bin/tessera-run" --hosts h1:1,h2:1 "$out/session_cost" "$bytes" 2000 9
done
echo "1 host:"
"$build/bin/tessera-run" -n 2 "$out/session_cost" 8 2000 9
