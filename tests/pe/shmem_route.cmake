# The OpenSHMEM team reductions again, every supported one routed through the collective library.
foreach(n 1 2 3 4)
  add_test(NAME pe.shmem_reduce_routed.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 --env TESSERA_SHMEM_COLL_MIN=1 --env TESSERA_TIMEOUT=60
                   $<TARGET_FILE:pe_shmem_reduce> --gtest_brief=1)
  set_tests_properties(pe.shmem_reduce_routed.n${n} PROPERTIES LABELS pe TIMEOUT 120)
endforeach()
