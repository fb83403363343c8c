#!/bin/bash
# Bad input on the OpenSHMEM C API: each case of tests/spec/bad/bad_input.c must end the job with a non-zero
# status and one clear message naming the value and the limit (checked by a pattern).
#   bash shmem_badinput_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
src=$(cd "$(dirname "$0")/../spec/bad" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/tessera-cc" -std=c11 -O1 "$src/bad_input.c" -o "$work/bad" || { echo "FAIL: bad_input.c does not compile"; exit 1; }
fail=0

# expect <case> <npes> <pattern>
expect() {
  local name=$1 n=$2 pattern=$3
  "$build/bin/tessera-run" -n "$n" --timeout 30 "$work/bad" "$name" > "$work/out" 2>&1
  local rc=$?
  if [ $rc = 0 ]; then
    echo "FAIL: $name: the job succeeded"; cat "$work/out"; fail=1
  elif ! grep -Eq -- "$pattern" "$work/out"; then
    echo "FAIL: $name: no message matching /$pattern/:"; cat "$work/out"; fail=1
  fi
}

expect team_destroyed 2 "shmem_long_sum_reduce: team 0x[0-9a-f]+ was used after shmem_team_destroy"
expect team_invalid 2 "shmem_long_sum_reduce: team is SHMEM_TEAM_INVALID"
expect ctx_destroyed 2 "shmem_ctx_long_put: context 0x[0-9a-f]+ was used after shmem_ctx_destroy"
expect lock_not_held 2 "shmem_clear_lock: lock 0x[0-9a-f]+ is not held by PE [01]"
expect count_overflow 2 "shmem_long_broadcast: [0-9]+ elements of 8 bytes overflow the address space"
expect null_dest 2 "shmem_long_fcollect: dest is a null pointer with a size of 32 bytes"
expect root_out_of_range 3 "shmem_long_broadcast: PE_root 8 is out of range: the collective has 3 PEs \(0\.\.2\)"
expect aset_outside_job 2 "shmem_barrier: the active set \(PE_start 0, logPE_stride 1, PE_size 2\) ends at PE 2, beyond the job's last PE 1"
expect aset_not_member 2 "shmem_sync: PE 0 is not a member of the active set \(PE_start 1, logPE_stride 0, PE_size 1\)"
expect aset_bad_start 2 "shmem_broadcast64: PE_start -2 is outside the job's PEs 0\.\.1"
expect nreduce_negative 2 "shmem_long_sum_to_all: nreduce -1 is negative"
expect alltoalls_stride 2 "shmem_long_alltoalls: dst 0 must be at least 1"
expect not_symmetric 2 "shmem_long_sum_reduce: address 0x[0-9a-f]+ \(32 bytes\) is outside the symmetric heap"
expect partial_overlap 2 "shmem_long_sum_reduce: dest 0x[0-9a-f]+ and source 0x[0-9a-f]+ overlap partially"
expect session_bad_option 1 "shmem_session_start: options 0x20 hold bits no session option has"
expect session_not_started 1 "shmem_session_stop: context 0x[0-9a-f]+ is not in a session"
expect session_null_config 1 "shmem_session_start: config_mask is 0x1 but config is null"
[ $fail = 0 ] && echo "all bad-input cases reported"
exit $fail
