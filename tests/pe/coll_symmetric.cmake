# The engine on symmetric buffers (the OpenSHMEM layer's calls), every algorithm forced, with small staging
# so that the staged rows chunk.
tessera_pe_test(coll_symmetric NPES 1 2 3 4 7 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K)
