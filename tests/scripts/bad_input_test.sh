#!/usr/bin/env bash
# Bad input gets one clear message naming the value and the limit, and the job ends non-zero.
set -u
build=${1:?build dir}
run="$build/bin/tessera-run"
prog="$build/bin/pe_bad_input"
fails=0 passes=0
work_out=$(mktemp); work_err=$(mktemp)
trap 'rm -f "$work_out" "$work_err"' EXIT
shm_before=$(ls /dev/shm | grep -c '^tessera-' || true)

# expect <case> <npes> <expected exit: nonzero|N> <regex> [env K=V...]
expect() {
  local name=$1 n=$2 want=$3 re=$4; shift 4
  local envs=() e
  for e in "$@"; do envs+=(--env "$e"); done
  out=$(timeout 60 "$run" -n "$n" --timeout 30 "${envs[@]}" "$prog" "$name" 2>&1 </dev/null)
  rc=$?
  local ok=1
  if [ "$want" = nonzero ]; then [ $rc -ne 0 ] || ok=0; else [ $rc -eq "$want" ] || ok=0; fi
  echo "$out" | grep -Eq -- "$re" || ok=0
  if [ $ok = 1 ]; then passes=$((passes+1)); echo "ok   $name"
  else fails=$((fails+1)); echo "FAIL $name (exit $rc, wanted $want, pattern '$re')"; echo "$out" | sed 's/^/     | /'; fi
}

expect pe_too_big          2 nonzero "shmem_long_put: PE 2 is out of range: the job has 2 PEs \(0\.\.1\)"
expect pe_negative         2 nonzero "shmem_long_get: PE -1 is out of range"
expect dest_not_symmetric  2 nonzero "shmem_long_put: address 0x[0-9a-f]+ \(8 bytes\) is outside the symmetric heap"
expect source_not_symmetric 2 nonzero "shmem_long_get: address .* \(32 bytes\) is outside the symmetric heap"
expect past_heap_end       1 nonzero "shmem_putmem: address .* bytes\) is outside the symmetric heap"
expect null_source         2 nonzero "shmem_putmem: source is a null pointer with a size of 8 bytes"
expect count_overflow      2 nonzero "shmem_long_put: [0-9]+ elements of 8 bytes overflow the address space"
expect bad_cmp             1 nonzero "comparison 99 is not one of SHMEM_CMP_EQ"
expect wait_not_symmetric  1 nonzero "shmem_long_wait_until: address .* is outside the symmetric heap"
expect misaligned_atomic   2 nonzero "shmem_long_atomic_add: address .* is not aligned to 8 bytes"
expect free_not_heap       2 nonzero "shmem_free: 0x[0-9a-f]+ is not a block returned by shmem_malloc"
expect bad_signal_op       2 nonzero "signal operation 7 is neither SHMEM_SIGNAL_SET"
expect zero_stride         2 nonzero "stride 0 must be at least 1"
expect ctx_after_destroy   2 nonzero "context 0x[0-9a-f]+ was used after shmem_ctx_destroy"
expect invalid_team        2 nonzero "team is SHMEM_TEAM_INVALID"
expect before_init         1 nonzero "called before shmem_init"
expect my_pe_before_init   1 nonzero "tessera: shmem_my_pe: called before shmem_init"
expect alloc_size_mismatch 2 nonzero "PE 1: shmem_malloc: this PE's call is an allocation of 256 bytes aligned to 64 but PE 0's is an allocation of 128 bytes aligned to 64"
expect alloc_align_mismatch 3 nonzero "PE [12]: shmem_align: this PE's call is an allocation of 64 bytes aligned to 4096 but PE 0's is an allocation of 64 bytes aligned to 64"
expect free_mismatch       2 nonzero "PE 1: shmem_free: this PE's call is a free of the block at heap offset 0x[0-9a-f]+ but PE 0's is a free of the block at heap offset 0x[0-9a-f]+"
expect alloc_count_mismatch 2 nonzero "PE 1: shmem_malloc: this is symmetric heap call #[0-9]+ on this PE but #[0-9]+ on PE 0"
expect psync_null_after_use 2 nonzero "shmem_broadcast64: pSync is a null pointer"
expect psync_private_after_use 2 nonzero "shmem_broadcast64: address 0x[0-9a-f]+ \(16 bytes\) is outside the symmetric heap"
expect team_root_mismatch  3 nonzero "PE [0-2]: shmem_long_broadcast: collective mismatch on communicator .* \[root [0-2] vs [0-2]\]\. Every member must make the same collective calls"
expect team_count_mismatch 2 nonzero "PE [01]: shmem_long_sum_reduce: collective mismatch on communicator .* \[count (4 vs 8|8 vs 4)\]"
expect team_routine_mismatch 2 nonzero "PE [01]: shmem_long_(sum|max)_reduce: collective mismatch on communicator .* \[op (sum vs max|max vs sum)\]"
expect barrier_hang        2 nonzero "PE 0: timed out after 1\.[0-9] s \(TESSERA_TIMEOUT=1\) waiting for shmem_barrier_all #2 of this program on the world team \(2 PEs\) \(team sync [0-9]+, counting those that shmem_init, allocations and collectives make\); 1 of 2 PEs have not arrived: PE 1 \(at team sync [0-9]+\)" TESSERA_TIMEOUT=1
expect heap_exhausted      2 3       "cannot allocate 17592186044416 bytes: symmetric heap has .* free" SHMEM_DEBUG=1
expect wait_timeout        2 nonzero "PE [01]: timed out after 1\.[0-9] s \(TESSERA_TIMEOUT=1\) waiting for shmem_long_wait_until: .* == 42, value seen 0" TESSERA_TIMEOUT=1
expect bad_size_suffix     1 nonzero "environment: SHMEM_SYMMETRIC_SIZE=\"12Q\": unknown size suffix" SHMEM_SYMMETRIC_SIZE=12Q
expect size_over_limit     1 nonzero "SHMEM_SYMMETRIC_SIZE=100 TiB: larger than the limit of 64 TiB" SHMEM_SYMMETRIC_SIZE=100T
expect bad_timeout         1 nonzero "TESSERA_TIMEOUT=\"soon\": expected a number" TESSERA_TIMEOUT=soon
expect bad_stage_stores    2 nonzero "TESSERA_STAGE_STORES=sometimes: expected auto, ordinary or streaming" TESSERA_STAGE_STORES=sometimes
expect bad_compress        2 nonzero "TESSERA_COMPRESS=zip: expected none, bf16, fp8 or int8" TESSERA_COMPRESS=zip
expect bad_bucket_window   2 nonzero "TESSERA_BUCKET_WINDOW_US=\"soon\": expected an integer" TESSERA_BUCKET_WINDOW_US=soon
expect negative_bucket_window 2 nonzero "TESSERA_BUCKET_WINDOW_US=-5: must be 0 \(off\) or a positive number of microseconds" TESSERA_BUCKET_WINDOW_US=-5
expect unknown_variable    1 nonzero "unknown variable TESSERA_TIMEOUTT" TESSERA_TIMEOUTT=5
expect no_finalize         3 nonzero "tessera-run: PE 2 exited without calling shmem_finalize; ending the job"
expect global_exit         3 7       "tessera-run: PE 0 called shmem_global_exit\(7\); ending the job"
expect wrong_secret        2 0       "refused a bootstrap connection that did not present the job's secret"

# A collective that a member never joins: the deadline names what it waited for and prints every member's
# flight recorder (the LL call that had to wait shows how long it ran, the finished one "done").
out=$(timeout 60 "$run" -n 2 --timeout 30 --env TESSERA_TIMEOUT=1 "$prog" coll_hang 2>&1 </dev/null); rc=$?
ok=1
[ $rc -ne 0 ] || ok=0
for re in "PE 0: timed out after 1\.[0-9] s \(TESSERA_TIMEOUT=1\) waiting for rank 1 \(PE 1\) to publish its LL buffer for call #2" \
          "rank 0 \(PE 0\): 2 calls started" "#2 allreduce count 8 float32 sum \(ll\): RUNNING for 1\.[0-9]+ s, waiting for peers. LL buffers" \
          "#1 allreduce count 8 float32 sum \(ll\): done" "rank 1 \(PE 1\): 1 calls started"; do
  echo "$out" | grep -Eq -- "$re" || { ok=0; echo "     missing: $re"; }
done
if [ $ok = 1 ]; then passes=$((passes+1)); echo "ok   coll_hang"
else fails=$((fails+1)); echo "FAIL coll_hang (exit $rc)"; echo "$out" | sed 's/^/     | /'; fi

# Output printed before a fatal error reaches a redirected stdout, from the failing PE and from the PEs the
# job ends for it, with and without --tag-output.
for tag in "" --tag-output; do
  "$run" -n 3 --timeout 30 $tag "$prog" output_then_fatal > "$work_out" 2> "$work_err" </dev/null; rc=$?
  ok=1
  [ $rc -ne 0 ] || ok=0
  for p in 0 1 2; do grep -q "PE $p printed this before the error" "$work_out" || ok=0; done
  grep -q "shmem_long_p: PE 1048576 is out of range" "$work_err" || ok=0
  if [ $ok = 1 ]; then passes=$((passes+1)); echo "ok   output_then_fatal $tag"
  else fails=$((fails+1)); echo "FAIL output_then_fatal $tag (exit $rc)"; sed 's/^/     out| /' "$work_out"; sed 's/^/     err| /' "$work_err"; fi
done

# The launcher's own arguments.
out=$("$run" -n 2 --env NOEQUALS "$prog" x 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "expected K=V, got 'NOEQUALS'"; then passes=$((passes+1)); echo "ok   launcher_bad_env"
else fails=$((fails+1)); echo "FAIL launcher_bad_env: $out"; fi
out=$("$run" -n 0 "$prog" x 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q -- "-n: '0' is not a number of PEs (1 to 4096)"; then passes=$((passes+1)); echo "ok   launcher_zero_pes"
else fails=$((fails+1)); echo "FAIL launcher_zero_pes: $out"; fi
out=$("$run" -n 1 /nonexistent/program 2>&1); rc=$?
if [ $rc -eq 127 ] && echo "$out" | grep -q "cannot start /nonexistent/program: No such file"; then passes=$((passes+1)); echo "ok   launcher_missing_program"
else fails=$((fails+1)); echo "FAIL launcher_missing_program (exit $rc): $out"; fi

shm_after=$(ls /dev/shm | grep -c '^tessera-' || true)
if [ "$shm_after" -gt "$shm_before" ]; then fails=$((fails+1)); echo "FAIL shared-memory objects left behind: $(ls /dev/shm | grep '^tessera-')"; fi
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
