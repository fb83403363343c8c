#!/usr/bin/env bash
# A job started by Open MPI's mpirun (the PMIx bootstrap) across two namespace hosts: mpirun runs on h1 and
# starts h2's daemon through tests/hosts/rsh, as it would through ssh. The PEs must find each other on
# different hosts (the log's transport line: ucx for the other host's PE), pass the RMA and collective tests
# across the veth link, and h1's link must carry their traffic. Skips (77) unless run as root with mpirun.
#   bash tests/hosts/mpirun_hosts_test.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
. "$here/netns.sh"
hosts_require_root
command -v mpirun >/dev/null || { echo "skipped: mpirun is not installed (openmpi-bin)"; exit 77; }
trap hosts_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_up 2

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fails=0
# /proc/net/dev is the reader's network namespace (sysfs would show the root's devices).
bytes() { host_exec h1 awk '$1 == "eth0:" { print $10 }' /proc/net/dev; }
# NETNS_HOSTS_DIR is the harness's; the PEs' environment must hold only variables Tessera knows.
run() {  # program [args]: 2 PEs, one per host
  host_exec h1 timeout 120 mpirun --host h1,h2 -np 2 --mca plm_rsh_agent "$here/rsh" \
    --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 -x TESSERA_LOG=2 -x TESSERA_TIMEOUT=60 \
    env -u NETNS_HOSTS_DIR "$@" 2>&1
}
before=$(bytes)
out=$(run "$build/bin/pe_pgas_rma" --gtest_brief=1) || { echo "$out"; echo "FAIL pe_pgas_rma under mpirun across hosts"; fails=1; }
echo "$out" | grep -q "transports (PE 0's view): self for PE 0; ucx for PE 1" \
  || { echo "$out" | head -20; echo "FAIL the PEs did not reach each other through UCX"; fails=1; }
echo "$out" | grep -q "2 PEs on 2 hosts" || { echo "FAIL the log does not count 2 hosts"; fails=1; }
after=$(bytes)
[ $((after - before)) -gt 100000 ] || { echo "FAIL h1's eth0 sent only $((after - before)) bytes"; fails=1; }
out=$(run "$build/bin/pe_coll_hosts" --gtest_brief=1) || { echo "$out"; echo "FAIL pe_coll_hosts under mpirun"; fails=1; }
out=$(run "$build/bin/pe_shmem_coll" --gtest_brief=1) || { echo "$out"; echo "FAIL pe_shmem_coll under mpirun"; fails=1; }
[ $fails -eq 0 ] && echo "ok: RMA, collectives and OpenSHMEM collectives across 2 namespace hosts under mpirun (PMIx)"
exit $fails
