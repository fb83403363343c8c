#!/bin/sh
# Runs one PE of a tessera-run job as if it ran on host "h<rank / PPH>" (PPH = TEST_PES_PER_HOST,
# default 1): PEs with different host identities reach each other through the UCX transport (here over
# loopback TCP), PEs with the same one through shared memory. The job's PEs still share one kernel, so this
# tests the inter-host data path, not the network: tests/hosts/ runs jobs across network namespaces.
export TESSERA_HOST_ID="h$(( TESSERA_JOB_RANK / ${TEST_PES_PER_HOST:-1} ))"
exec "$@"
