#!/usr/bin/env bash
# Registered buffers (tesseraCommRegister) against the symmetric heap and against unregistered user buffers:
# bench/register_cost.c, 64 MiB and 1 MiB allreduce at 2 and 4 PEs, the three forms alternated in one run;
# with HOSTS=1 the same across two namespace hosts (tests/hosts/netns.sh) at 1 and 2 PEs per host.
#   [HOSTS=1] bash bench/register_compare.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(mktemp -d)
"$build/bin/tessera-cc" -O2 "$root/bench/register_cost.c" -o "$out/register_cost"
if [ "${HOSTS:-0}" = 1 ]; then
  # shellcheck source=../tests/hosts/netns.sh disable=SC1091
  . "$root/tests/hosts/netns.sh"
  hosts_require_root
  trap 'hosts_down; rm -rf "$out"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  hosts_up 2
  export TESSERA_RSH=$root/tests/hosts/rsh
  for layout in h1:1,h2:1 h1:2,h2:2; do
    for bytes in 67108864 1048576; do
      iters=$((bytes > 1048576 ? 3 : 30))
      echo "hosts $layout:"
      "$build/bin/tessera-run" --hosts "$layout" --env SHMEM_SYMMETRIC_SIZE=512M "$out/register_cost" "$bytes" "$iters" 7
    done
  done
  exit 0
fi
trap 'rm -rf "$out"' EXIT
for n in 2 4; do
  for bytes in 67108864 1048576; do
    iters=$((bytes > 1048576 ? 5 : 50))
    "$build/bin/tessera-run" -n "$n" --env SHMEM_SYMMETRIC_SIZE=512M "$out/register_cost" "$bytes" "$iters" 7
  done
done
