# MoE dispatch and combine (tessera/moe.hpp, moe.h) against a reference each PE computes.
tessera_pe_test(moe NPES 1 2 3 4 TIMEOUT 120)
