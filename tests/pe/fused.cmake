# Fused MatMul + AllReduce (tessera/fused.hpp) against the product each PE computes itself: on one host at
# 1-4 PEs, and across hosts through pe/as_hosts.sh (2 hosts of 1 PE, 2 of 2, 3 PEs as 2+1): tiles and rows
# of other hosts by get.
tessera_pe_test(fused NPES 1 2 3 4 TIMEOUT 120)
tessera_pe_hosts_test(fused 2:1 4:2 3:2)
