# GNN aggregation (tessera/gnn.hpp) against a reference each PE computes: on one host at 1-4 PEs, and across
# hosts through pe/as_hosts.sh (2 hosts of 1 PE, 2 of 2, 3 PEs as 2+1): rows of other hosts by get.
tessera_pe_test(gnn NPES 1 2 3 4 TIMEOUT 120)
tessera_pe_hosts_test(gnn 2:1 4:2 3:2)
