#!/usr/bin/env bash
# The long fault-injection run of docs/testing.md: N rounds (default 200) of
# tests/scripts/fault_injection_test.sh on a release build, which prints each round, the worst and the median
# time to end the job after the kill. Needs tessera-run, tessera-info and pe_fault_mix built:
#   cmake --build build --target tessera-run tessera-info pe_fault_mix
#   scripts/fault_rounds.sh [N] [--seed S]
set -u
n=${1:-200}
shift $(( $# > 0 ? 1 : 0 ))
root=$(cd "$(dirname "$0")/.." && pwd)
exec bash "$root/tests/scripts/fault_injection_test.sh" "${BUILD:-$root/build}" --rounds "$n" "$@"
