# Collective layer under tessera-run. Small staging (64 KiB; 8 KiB send/recv channels) so that
# chunking, slot reuse, pipelining and ring-buffer wrap-around are exercised with modest counts.
tessera_pe_test(coll_algos NPES 1 2 3 4 7 8 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K)
# The data paths (single copy, zero copy), with the same staging. The single-copy tests (SingleCopy.*) run on
# their own, so that a host without the path reports them skipped (pe_main.h) instead of passed.
tessera_pe_test(coll_paths NPES 1 2 3 4 7 8 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K
                ARGS --gtest_filter=-SingleCopy.*)
foreach(n 2 3 4 7 8)
  add_test(NAME pe.coll_paths_single_copy.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 --env TESSERA_BUFFSIZE=64K --env TESSERA_P2P_BUFFSIZE=8K
                   $<TARGET_FILE:pe_coll_paths> --gtest_brief=1 --gtest_filter=SingleCopy.*)
  set_tests_properties(pe.coll_paths_single_copy.n${n} PROPERTIES LABELS pe TIMEOUT 300)
endforeach()
# Barrier, send/recv groups and split, with the same staging.
tessera_pe_test(coll_groups NPES 1 2 3 4 7 8 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K)
# The LL protocol (small calls without steps), with the same staging.
tessera_pe_test(coll_ll NPES 1 2 3 4 7 8 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K)
# The consistency check's mismatches, with the same staging.
tessera_pe_test(coll_consistency NPES 1 2 3 4 7 8 TIMEOUT 300 ENV TESSERA_BUFFSIZE=64K TESSERA_P2P_BUFFSIZE=8K)
# Determinism and the thorough consistency check (result hashes compared across ranks).
tessera_pe_test(coll_determinism NPES 2 3 5 TIMEOUT 120
                ENV TESSERA_BUFFSIZE=64K TESSERA_CHECK=1 TESSERA_DETERMINISTIC=1)
# The same tests with the single-copy path turned off: the staged algorithms are selected instead.
add_test(NAME pe.coll_algos_nocma.n4
         COMMAND ${TESSERA_RUN} -n 4 --timeout 300 --env TESSERA_BUFFSIZE=64K --env TESSERA_P2P_BUFFSIZE=8K
                 --env TESSERA_COLL_CMA=0 $<TARGET_FILE:pe_coll_algos> --gtest_brief=1)
add_test(NAME pe.coll_paths_nocma.n4
         COMMAND ${TESSERA_RUN} -n 4 --timeout 300 --env TESSERA_BUFFSIZE=64K --env TESSERA_P2P_BUFFSIZE=8K
                 --env TESSERA_COLL_CMA=0 $<TARGET_FILE:pe_coll_paths> --gtest_brief=1 --gtest_filter=-SingleCopy.*)
add_test(NAME pe.coll_groups_nocma.n4
         COMMAND ${TESSERA_RUN} -n 4 --timeout 300 --env TESSERA_BUFFSIZE=64K --env TESSERA_P2P_BUFFSIZE=8K
                 --env TESSERA_COLL_CMA=0 $<TARGET_FILE:pe_coll_groups> --gtest_brief=1)
set_tests_properties(pe.coll_algos_nocma.n4 pe.coll_paths_nocma.n4 pe.coll_groups_nocma.n4 PROPERTIES LABELS pe
                     TIMEOUT 300)
# Streaming stores into staging (algos/stage.cc), forced: slots of 256 KiB so that staging writes reach the
# 64 KiB from which they stream (ZeroCopy counts steps for 64 KiB staging and stays out).
foreach(n 2 3)
  foreach(t coll_algos coll_paths)
    set(_filter)
    if(t STREQUAL coll_paths)
      set(_filter --gtest_filter=-ZeroCopy.*)
    endif()
    add_test(NAME pe.${t}_stream_stores.n${n}
             COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 --env TESSERA_BUFFSIZE=1M --env TESSERA_P2P_BUFFSIZE=8K
                     --env TESSERA_STAGE_STORES=streaming $<TARGET_FILE:pe_${t}> --gtest_brief=1 ${_filter})
    set_tests_properties(pe.${t}_stream_stores.n${n} PROPERTIES LABELS pe TIMEOUT 300)
  endforeach()
endforeach()
# Buffer reuse with a forced window (TESSERA_TEST_STALL_READ): PE 0 sleeps 20 us before each read of another
# member's staging slot or LL buffer, so the others run ahead to the staging slots' credits (Exec::wait_free)
# and the LL buffers' reuse check (ll_sync_reuse) every time, not only when a PE happens to lag. The data
# paths' tests stay out: the stall changes which path the members agree on.
foreach(t coll_algos coll_ll)
  add_test(NAME pe.${t}_stalled.n3
           COMMAND ${TESSERA_RUN} -n 3 --timeout 300 --env TESSERA_TIMEOUT=60 --env TESSERA_BUFFSIZE=64K
                   --env TESSERA_P2P_BUFFSIZE=8K --env TESSERA_TEST_STALL_READ=0:20 $<TARGET_FILE:pe_${t}>
                   --gtest_brief=1)
  set_tests_properties(pe.${t}_stalled.n3 PROPERTIES LABELS pe TIMEOUT 300)
endforeach()
# Comm streams, events and gradient bucketing through the public C++ API.
tessera_pe_test(coll_stream NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
# The data-parallel example checks itself (identical parameters on every PE after each step).
foreach(n 1 3)
  add_test(NAME example.data_parallel_step.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 $<TARGET_FILE:data_parallel_step>)
  set_tests_properties(example.data_parallel_step.n${n} PROPERTIES LABELS pe TIMEOUT 120)
endforeach()
add_test(NAME example.data_parallel_step_host_joins.n3
         COMMAND ${TESSERA_RUN} -n 3 --timeout 120 $<TARGET_FILE:data_parallel_step> --host-joins)
set_tests_properties(example.data_parallel_step_host_joins.n3 PROPERTIES LABELS pe TIMEOUT 120)
# The public C and C++ reduction calls (every type and operator) with each algorithm forced in turn through
# TESSERA_ALGO, as a user would force it: the internal matrix forces algorithms through dispatch, this pins the
# public entry points to the same algorithms. A forced algorithm that does not support a call falls back to
# the cost model (the LL protocol's 512 B limit is below these counts; the LL tests cover it).
set(_forced "allreduce=oneshot,reduce_scatter=direct,reduce=oneshot"
            "allreduce=direct,reduce_scatter=ring,reduce=direct"
            "allreduce=ring,reduce_scatter=cma,reduce=oneshot"
            "allreduce=rabenseifner,reduce_scatter=direct,reduce=direct"
            "allreduce=dbtree,reduce_scatter=ring,reduce=oneshot"
            "allreduce=cma,reduce_scatter=cma,reduce=direct")
set(_i 0)
foreach(algos IN LISTS _forced)
  foreach(n 3 4)
    add_test(NAME pe.coll_api_forced${_i}.n${n}
             COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 --env TESSERA_BUFFSIZE=64K --env TESSERA_ALGO=${algos}
                     $<TARGET_FILE:pe_coll_algos> --gtest_brief=1 --gtest_filter=Api.EveryTypeAndOperator)
    set_tests_properties(pe.coll_api_forced${_i}.n${n} PROPERTIES LABELS pe TIMEOUT 120)
  endforeach()
  math(EXPR _i "${_i} + 1")
endforeach()
# Persistent plans (coll.h's Init calls, tesseraStart) through the public APIs, on one host and across hosts.
tessera_pe_test(coll_plan NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60 TESSERA_BUFFSIZE=64K)
tessera_pe_hosts_test(coll_plan 2:1 4:2)
# Registered buffers (coll.h's tesseraCommRegister) through the public APIs, on one host and across hosts.
tessera_pe_test(coll_register NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
tessera_pe_hosts_test(coll_register 2:1 4:2)
# Compressed collectives across hosts (tesseraCommSetCompression): coded between hosts, unchanged on one.
tessera_pe_test(coll_compress NPES 1 2 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
tessera_pe_hosts_test(coll_compress 2:1 3:1 4:2)
# The coded allreduce's pipeline in many pieces (512 values each) at 3 hosts, where pieces are forwarded.
add_test(NAME pe.coll_compress.hosts3pes1pph.pieces
         COMMAND ${TESSERA_RUN} -n 3 --timeout 300 --env TESSERA_TIMEOUT=60 --env TEST_PES_PER_HOST=1
                 --env TESSERA_COMPRESS_PIECE=500
                 ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh $<TARGET_FILE:pe_coll_compress> --gtest_brief=1)
set_tests_properties(pe.coll_compress.hosts3pes1pph.pieces PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
# A PE busy outside the library for seconds while a peer on another host has sent it more than the sockets
# hold: the data connections must not give the peer up (bootstrap/tcp_socket.h: Reader).
add_executable(pe_net_busy_reader ${CMAKE_CURRENT_SOURCE_DIR}/pe/net_busy_reader_test.cc)
target_link_libraries(pe_net_busy_reader PRIVATE tessera_internal GTest::gtest GTest::gmock)
tessera_pe_hosts_test(net_busy_reader 2:1 4:2)
