# OpenSHMEM collectives, locks and deprecated names: every group at 1, 2, 3 and 4 PEs; the collectives, which
# run on the collective engine, also at 8 (more PEs than the engine's LL stagger, oversubscribed 4:1 here).
foreach(group coll reduce active)
  tessera_pe_test(shmem_${group} NPES 1 2 3 4 8 TIMEOUT 300 ENV TESSERA_TIMEOUT=60)
endforeach()
foreach(group lock deprecated)
  tessera_pe_test(shmem_${group} NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
endforeach()
