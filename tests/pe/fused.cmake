# Fused MatMul + AllReduce (tessera/fused.hpp) against the product each PE computes itself.
tessera_pe_test(fused NPES 1 2 3 4 TIMEOUT 120)
