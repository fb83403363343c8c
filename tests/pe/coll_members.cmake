# Communicators formed by their members alone, non-collective release, recv from any source, mismatches
# that throw (the process groups of python/ rely on these).
tessera_pe_test(coll_members NPES 1 2 3 4 TIMEOUT 120)
