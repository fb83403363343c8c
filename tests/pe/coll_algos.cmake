# Collective layer (issue 4) under tessera-run. Small staging (64 KiB; 8 KiB send/recv channels) so that
# chunking, slot reuse, pipelining and ring-buffer wrap-around are exercised with modest counts.
tessera_pe_test(coll_algos NPES 1 2 3 4 7 8 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K)
# Determinism and the thorough consistency check (result hashes compared across ranks).
tessera_pe_test(coll_determinism NPES 2 3 5 TIMEOUT 120
                ENV TESSERA_BUFFSIZE=64K TESSERA_CHECK=1 TESSERA_DETERMINISTIC=1)
