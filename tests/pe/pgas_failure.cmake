# Programs driven by tests/scripts/{bad_input,pe_death,fault_injection}_test.sh: they are expected to fail, in
# known ways.
add_executable(pe_bad_input ${CMAKE_CURRENT_SOURCE_DIR}/pe/bad_input.cc)
target_link_libraries(pe_bad_input PRIVATE tessera_internal)
add_executable(pe_barrier_loop ${CMAKE_CURRENT_SOURCE_DIR}/pe/barrier_loop.c)
target_link_libraries(pe_barrier_loop PRIVATE tessera)
# Driven by tests/scripts/fault_injection_test.sh: puts, barriers, collectives, kernels and comm streams in a
# loop, one PE of which is killed.
add_executable(pe_fault_mix ${CMAKE_CURRENT_SOURCE_DIR}/pe/fault_mix.cc)
target_link_libraries(pe_fault_mix PRIVATE tessera)
# Driven by tests/scripts/shared_cpus_test.sh: a ping-pong timed while outside processes share the CPUs.
add_executable(pe_pingpong_load ${CMAKE_CURRENT_SOURCE_DIR}/pe/pingpong_load.c)
target_link_libraries(pe_pingpong_load PRIVATE tessera)

# A job that hangs on purpose, for the hang report (scripts/hang_report_test.sh).
add_executable(pe_hang ${CMAKE_CURRENT_SOURCE_DIR}/pe/hang.c)
target_link_libraries(pe_hang PRIVATE tessera)

# A job that finalizes with non-blocking puts and atomics in flight (finalize completes them): at 2 and 4 PEs,
# across as_hosts.sh hosts (2 of 2), and 50 times over slowed namespace hosts (tests/hosts/slow_link_test.sh).
add_executable(pe_finalize_inflight ${CMAKE_CURRENT_SOURCE_DIR}/pe/finalize_inflight.c)
target_link_libraries(pe_finalize_inflight PRIVATE tessera)
foreach(n 2 4)
  add_test(NAME pe.finalize_inflight.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 60 --env TESSERA_TIMEOUT=30 $<TARGET_FILE:pe_finalize_inflight>)
  set_tests_properties(pe.finalize_inflight.n${n} PROPERTIES LABELS pe TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "finalize_inflight: ok")
endforeach()
add_test(NAME pe.finalize_inflight.hosts2x2
         COMMAND ${TESSERA_RUN} -n 4 --timeout 60 --env TESSERA_TIMEOUT=30 --env TEST_PES_PER_HOST=2
                 ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh $<TARGET_FILE:pe_finalize_inflight>)
set_tests_properties(pe.finalize_inflight.hosts2x2 PROPERTIES LABELS "pe;hosts" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "finalize_inflight: ok")

# Initializing again after the last shmem_finalize (OpenSHMEM 1.6; tests/spec/init_again.c, which the spec
# harness runs at 1-4 PEs on one host): here with peers on other hosts (UCX), whose transport is torn down
# and made again.
add_executable(pe_init_again ${CMAKE_CURRENT_SOURCE_DIR}/spec/init_again.c)
target_link_libraries(pe_init_again PRIVATE tessera)
add_test(NAME pe.init_again.hosts2x2
         COMMAND ${TESSERA_RUN} -n 4 --timeout 60 --env TESSERA_TIMEOUT=30 --env TEST_PES_PER_HOST=2
                 ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh $<TARGET_FILE:pe_init_again>)
set_tests_properties(pe.init_again.hosts2x2 PROPERTIES LABELS "pe;hosts" TIMEOUT 60)

# Resilient mode (tests/scripts/resilience_test.sh): allreduces, one PE killed, the others shrink and go on.
add_executable(pe_resilient ${CMAKE_CURRENT_SOURCE_DIR}/pe/resilient.c)
target_link_libraries(pe_resilient PRIVATE tessera)
# Fault trials of resilient mode (bench/resilience_trials.sh, and a few in tests/scripts/resilience_test.sh).
add_executable(pe_resilient_mix ${CMAKE_CURRENT_SOURCE_DIR}/pe/resilient_mix.c)
target_link_libraries(pe_resilient_mix PRIVATE tessera)
add_executable(pe_resilient_mix_teams ${CMAKE_CURRENT_SOURCE_DIR}/pe/resilient_mix_teams.c)
target_link_libraries(pe_resilient_mix_teams PRIVATE tessera)
# OpenSHMEM teams in resilient mode: errors, shmemx_team_shrink (tests/scripts/resilience_test.sh).
add_executable(pe_resilient_teams ${CMAKE_CURRENT_SOURCE_DIR}/pe/resilient_teams.c)
target_link_libraries(pe_resilient_teams PRIVATE tessera)
# Resilient mode through the C++ API (tests/scripts/resilience_test.sh).
add_executable(pe_resilient_cxx ${CMAKE_CURRENT_SOURCE_DIR}/pe/resilient_cxx.cc)
target_link_libraries(pe_resilient_cxx PRIVATE tessera)
# Growing back (tests/scripts/grow_test.sh): a replacement started by --restarts joins the survivors.
add_executable(pe_grow ${CMAKE_CURRENT_SOURCE_DIR}/pe/grow.c)
target_link_libraries(pe_grow PRIVATE tessera)
add_executable(pe_grow_cxx ${CMAKE_CURRENT_SOURCE_DIR}/pe/grow_cxx.cc)
target_link_libraries(pe_grow_cxx PRIVATE tessera)
