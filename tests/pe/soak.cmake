# tessera-soak (tools/soak) on 4 PEs for about 30 s: with a fixed seed; with a random one (printed in the log
# for replay) and small staging, as coll_algos.cmake, so that the collectives' chunking and slot reuse are
# soaked too (the default 8 MiB staging is never reached by the soak's payloads); and with a wrong expected
# value planted (hidden --inject-error), which must be reported with the replay line and fail the job.
# soak_run.sh asserts the exit status and the verified-operation count.
set(_soak ${TESSERA_RUN} -n 4 --timeout 240 --env TESSERA_TIMEOUT=60 $<TARGET_FILE:tessera-soak>)
add_test(NAME soak.fixed_seed.n4 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pe/soak_run.sh pass ${_soak} --seed 20261126 --seconds 30)
add_test(NAME soak.random_seed.n4
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pe/soak_run.sh pass ${TESSERA_RUN} -n 4 --timeout 240
                 --env TESSERA_TIMEOUT=60 --env TESSERA_BUFFSIZE=64K --env TESSERA_P2P_BUFFSIZE=8K
                 $<TARGET_FILE:tessera-soak> --seconds 30)
add_test(NAME soak.catches_wrong_result.n4
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pe/soak_run.sh wrong ${_soak} --seed 7 --ops 500 --inject-error 3)
set_tests_properties(soak.fixed_seed.n4 soak.random_seed.n4 soak.catches_wrong_result.n4 PROPERTIES LABELS pe TIMEOUT 300)
