# Kernel-initiated communication: block-cooperative put and the PE-sharded softmax at 1, 2, 4 PEs.
tessera_pe_test(kernel_dist NPES 1 2 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
