# MoE dispatch and combine (tessera/moe.hpp, moe.h) against a reference each PE computes: on one host at 1-4
# PEs, and across hosts through pe/as_hosts.sh (2 hosts of 1 PE, 2 of 2, 3 PEs as 2+1): puts, atomics and
# signals through the UCX transport.
tessera_pe_test(moe NPES 1 2 3 4 TIMEOUT 120)
tessera_pe_hosts_test(moe 2:1 4:2 3:2)
