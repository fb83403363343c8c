#!/usr/bin/env bash
# soak_run.sh pass|wrong COMMAND...: runs a tessera-soak job and asserts its outcome.
#   pass:  exit 0, the seed printed, and a nonzero count of verified operations with 0 wrong results;
#   wrong: a planted wrong expected value (--inject-error) is reported as WRONG RESULT with the replay line,
#          and the job exits non-zero.
set -u
mode=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "soak_run.sh: FAIL: $*" >&2; exit 1; }
case $mode in
  pass)
    [ "$rc" -eq 0 ] || fail "exit status $rc"
    printf '%s\n' "$out" | grep -q 'tessera-soak: seed [0-9]* on 4 PEs' || fail "no seed line"
    n=$(printf '%s\n' "$out" | sed -n 's/.*verified operations: \([0-9]*\), wrong results: 0$/\1/p')
    [ -n "$n" ] && [ "$n" -gt 0 ] || fail "no nonzero verified-operation count"
    ;;
  wrong)
    [ "$rc" -ne 0 ] || fail "a planted wrong result went unnoticed (exit 0)"
    printf '%s\n' "$out" | grep -q 'WRONG RESULT on PE 0 at step' || fail "no WRONG RESULT report"
    printf '%s\n' "$out" | grep -q 'replay: tessera-run -n 4 tessera-soak --seed 7 --ops [0-9]' || fail "no replay line"
    ;;
  *) fail "mode $mode" ;;
esac
echo "soak_run.sh: ok ($mode)"
