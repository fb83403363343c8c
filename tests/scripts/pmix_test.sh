#!/usr/bin/env bash
# Jobs started by Open MPI's mpirun bootstrap through PMIx: the foundation and collective tests pass at 1-4
# PEs, a program that initializes again after its last finalize runs, a PE that dies ends the job without leaving shared memory behind, and a program built by tessera-cc
# runs unchanged. (mpirun comes with openmpi-bin, which scripts/install-deps.sh installs for the tests.)
set -u
build=${1:?build dir}
. "$(dirname "$0")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none)
command -v mpirun >/dev/null || { echo "FAIL mpirun not found (install openmpi-bin)"; exit 1; }

# 1. Test programs at 1..4 PEs under mpirun.
for n in 1 2 3 4; do
  for t in pe_pgas_rma pe_pgas_amo pe_pgas_team pe_pgas_order pe_coll_algos pe_coll_paths pe_coll_groups; do
    # The collective tests assume the small staging their ctest entry sets (tests/pe/coll_algos.cmake).
    timeout 300 "${mpirun[@]}" -np $n -x TESSERA_BUFFSIZE=64K -x TESSERA_P2P_BUFFSIZE=8K "$build/bin/$t" \
      --gtest_brief=1 > "$tmp/out" 2>&1
    rc=$?
    check "mpirun -np $n $t exits 0 ($rc)" "[ $rc -eq 0 ]" || tail -20 "$tmp/out"
  done
done
out=$(timeout 120 "${mpirun[@]}" -np 4 "$build/bin/ring_pass" 2>&1)
check "ring_pass verifies its data on 4 PEs" "echo \"$out\" | grep -q 'all data verified'"
check "nothing left in /dev/shm after clean runs" "[ -z \"\$(leftovers)\" ]"

# 2. Each PE learns the same job: PE numbers and size agree with mpirun's ranks.
cat > "$tmp/who.c" <<'EOF'
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  shmem_init();
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  const char* s = getenv("OMPI_COMM_WORLD_SIZE");
  int ok = r && s && atoi(r) == shmem_my_pe() && atoi(s) == shmem_n_pes();
  static long sum = 0;
  shmem_long_atomic_add(&sum, shmem_my_pe() + 1, 0);
  shmem_barrier_all();
  if (shmem_my_pe() == 0) printf("sum %ld\n", sum);
  printf("pe %d of %d %s\n", shmem_my_pe(), shmem_n_pes(), ok ? "agrees" : "DISAGREES");
  shmem_finalize();
  return ok ? 0 : 1;
}
EOF
"$build/bin/tessera-cc" "$tmp/who.c" -o "$tmp/who" > "$tmp/cc.log" 2>&1
check "tessera-cc builds a program" "[ -x '$tmp/who' ]" || cat "$tmp/cc.log"
out=$(timeout 120 "${mpirun[@]}" -np 3 "$tmp/who" 2>&1); rc=$?
check "3 PEs agree with mpirun's ranks ($rc)" "[ $rc -eq 0 ] && [ \$(echo \"$out\" | grep -c agrees) -eq 3 ]"
check "an atomic over the static-variable heap sums every PE (1+2+3)" "echo \"$out\" | grep -q '^sum 6$'"

# 2b. Initializing again after the last finalize (tests/spec/init_again.c, three rounds) at 2 and 4 PEs, once
# with PE 0 starting each next round 1.5 s after the others: the PMIx client stays connected across
# shmem_finalize, so the others' fences wait for PE 0 instead of completing without it.
for n in 2 4; do
  for delay in 0 1500; do
    timeout 120 "${mpirun[@]}" -np $n -x INIT_AGAIN_PE0_DELAY_MS=$delay "$build/bin/pe_init_again" > "$tmp/out" 2>&1
    rc=$?
    check "mpirun -np $n: init after the last finalize, PE 0 $delay ms late, exits 0 ($rc)" "[ $rc -eq 0 ]" ||
      tail -20 "$tmp/out"
  done
done
check "nothing left in /dev/shm after the rounds of init and finalize" "[ -z \"\$(leftovers)\" ]"

# 3. A PE killed in the middle of a barrier loop: mpirun ends the job, nothing is left behind.
rm -f "$tmp/pid"
timeout 120 "${mpirun[@]}" -np 4 "$build/bin/pe_barrier_loop" "$tmp/pid" > "$tmp/out" 2>&1 &
job=$!
for _ in $(seq 1 200); do [ -s "$tmp/pid" ] && break; sleep 0.05; done
sleep 0.3
start=$(date +%s%N)
kill -KILL "$(cat "$tmp/pid")"
wait $job
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "job ended within 10 s of the kill (took ${elapsed_ms} ms)" "[ $elapsed_ms -lt 10000 ]"
check "exit status non-zero ($rc)" "[ $rc -ne 0 ] && [ $rc -ne 124 ]"
sleep 0.5
check "nothing left in /dev/shm after the kill" "[ -z \"\$(leftovers)\" ]"
check "no PE process left" "! pgrep -f '$build/bin/pe_barrier_loop' >/dev/null"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
