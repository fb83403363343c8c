# Kernel-initiated communication: block-cooperative put and the PE-sharded softmax at 1, 2, 4 PEs.
tessera_pe_test(kernel_dist NPES 1 2 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
# Compute streams joined to comm streams by events, both ways, on one host and across hosts.
tessera_pe_test(compute_stream NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
tessera_pe_hosts_test(compute_stream 2:1 4:2)
