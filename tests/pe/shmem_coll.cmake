# OpenSHMEM collectives, locks and deprecated names: every group at 1, 2, 3 and 4 PEs.
foreach(group coll reduce active lock deprecated)
  tessera_pe_test(shmem_${group} NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
endforeach()
