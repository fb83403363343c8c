# Kernel-initiated communication: block-cooperative put and the PE-sharded softmax at 1, 2, 4 PEs.
tessera_pe_test(kernel_dist NPES 1 2 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
# Compute streams joined to comm streams by events, both ways, on one host and across hosts.
tessera_pe_test(compute_stream NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
tessera_pe_hosts_test(compute_stream 2:1 4:2)
# The same from C (tessera/kernel.h): kernels and operators on streams, events both ways, capture, errors.
add_executable(pe_compute_stream_c ${CMAKE_CURRENT_SOURCE_DIR}/pe/compute_stream_c.c)
target_link_libraries(pe_compute_stream_c PRIVATE tessera m)
foreach(n 1 2 4)
  add_test(NAME pe.compute_stream_c.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 --env TESSERA_TIMEOUT=60 $<TARGET_FILE:pe_compute_stream_c>)
  set_tests_properties(pe.compute_stream_c.n${n} PROPERTIES LABELS pe TIMEOUT 120)
endforeach()
add_test(NAME pe.compute_stream_c.hosts4pes2pph
         COMMAND ${TESSERA_RUN} -n 4 --timeout 300 --env TESSERA_TIMEOUT=60 --env TEST_PES_PER_HOST=2
                 ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh $<TARGET_FILE:pe_compute_stream_c>)
set_tests_properties(pe.compute_stream_c.hosts4pes2pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
# BatchNorm and the PE-sharded softmax from C: results, streams, the same statistics on every PE, errors.
add_executable(pe_kernel_ops_c ${CMAKE_CURRENT_SOURCE_DIR}/pe/kernel_ops_c.c)
target_link_libraries(pe_kernel_ops_c PRIVATE tessera m)
foreach(n 1 2 3 4)
  add_test(NAME pe.kernel_ops_c.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 --env TESSERA_TIMEOUT=60 $<TARGET_FILE:pe_kernel_ops_c>)
  set_tests_properties(pe.kernel_ops_c.n${n} PROPERTIES LABELS pe TIMEOUT 120)
endforeach()
