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
