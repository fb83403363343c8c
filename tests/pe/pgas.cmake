# PGAS foundation: every routine group at 1, 2, 3 and 4 PEs (4 oversubscribes the 2-core machines).
foreach(group rma amo signal wait team heap threads order cpp)
  tessera_pe_test(pgas_${group} NPES 1 2 3 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
endforeach()
# The data path through a transport record: each PE reroutes a peer through a test transport.
tessera_pe_test(pgas_transport NPES 1 2 3 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
# The copy engine forced on (also when no core is spare) with 4 KiB chunks, so that transfers of a few KiB
# are split with it.
tessera_pe_test(pgas_engine NPES 1 2 3 4 TIMEOUT 120
                ENV TESSERA_TIMEOUT=60 TESSERA_COPY_ENGINE=always TESSERA_COPY_ENGINE_MIN=4K TESSERA_COPY_ENGINE_CHUNK=4K)
# Ordering with the copy engine holding the last chunk of every non-blocking put for 5 ms: a fence or quiet
# that does not complete the put lets the flag after it arrive first.
foreach(n 2 3)
  add_test(NAME pe.pgas_order_held.n${n}
           COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 --env TESSERA_TIMEOUT=60 --env TESSERA_COPY_ENGINE=always
                   --env TESSERA_COPY_ENGINE_MIN=4K --env TESSERA_COPY_ENGINE_CHUNK=4K
                   --env TESSERA_TEST_ENGINE_HOLD_NS=5000000 $<TARGET_FILE:pe_pgas_order> --gtest_brief=1)
  set_tests_properties(pe.pgas_order_held.n${n} PROPERTIES LABELS pe TIMEOUT 120)
endforeach()
# Waits and signals under the test hook TESSERA_TEST_NO_RECHECK=1: a sleeper parks until its deadline, not
# for a re-check slice, so a writer that does not ring its doorbell (notify_range) fails the wait at the
# deadline instead of costing a slice. 2 PEs, and 4 on the 2-core machines, where waiters do sleep.
foreach(group wait signal)
  foreach(n 2 4)
    add_test(NAME pe.pgas_${group}.n${n}_no_recheck
             COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 --env TESSERA_TIMEOUT=20 --env TESSERA_TEST_NO_RECHECK=1
                     $<TARGET_FILE:pe_pgas_${group}> --gtest_brief=1)
    set_tests_properties(pe.pgas_${group}.n${n}_no_recheck PROPERTIES LABELS pe TIMEOUT 120)
  endforeach()
endforeach()
# Both barrier forms of the teams on one host, each at PE counts the default does not give it: the flat
# one with more PEs than CPUs (bound at 4, unbound at 3), the arrival counter at 2.
foreach(form flat:3 flat:4 counter:2)
  string(REPLACE ":" ";" _f ${form})
  list(GET _f 0 _form)
  list(GET _f 1 _n)
  foreach(prog pgas_team shmem_coll)
    add_test(NAME pe.${prog}.barrier_${_form}_n${_n}
             COMMAND ${TESSERA_RUN} -n ${_n} --timeout 120 --env TESSERA_TIMEOUT=60 --env TESSERA_BARRIER=${_form}
                     $<TARGET_FILE:pe_${prog}> --gtest_brief=1)
    set_tests_properties(pe.${prog}.barrier_${_form}_n${_n} PROPERTIES LABELS pe TIMEOUT 120)
  endforeach()
endforeach()
# Started without any launcher: a job of one PE whose static variables are still symmetric.
add_test(NAME pe.pgas_rma.no_launcher COMMAND $<TARGET_FILE:pe_pgas_rma> --gtest_brief=1)
set_tests_properties(pe.pgas_rma.no_launcher PROPERTIES LABELS pe TIMEOUT 120)
# Threads again with the PEs unbound (tessera-run --bind-to none sets TESSERA_BIND=none).
add_test(NAME pe.pgas_threads.n2_unbound
         COMMAND ${TESSERA_RUN} -n 2 --timeout 120 --bind-to none $<TARGET_FILE:pe_pgas_threads> --gtest_brief=1)
set_tests_properties(pe.pgas_threads.n2_unbound PROPERTIES LABELS pe TIMEOUT 120)
# Across hosts on one machine (pe/as_hosts.sh): every PE a host of its own (2 and 3 hosts), and 2 hosts of
# 2 PEs, where each PE reaches one peer through shared memory and two through UCX. Locks too (their word is
# on PE 0).
foreach(group rma amo signal wait team heap threads order cpp shmem_lock)
  foreach(layout 2x1 3x1 2x2)
    string(REGEX MATCHALL "[0-9]+" _hp ${layout})
    list(GET _hp 0 _hosts)
    list(GET _hp 1 _pph)
    math(EXPR _n "${_hosts} * ${_pph}")
    set(_prog pgas_${group})
    if(group MATCHES "^shmem_")
      set(_prog ${group})
    endif()
    add_test(NAME pe.${_prog}.hosts${layout}
             COMMAND ${TESSERA_RUN} -n ${_n} --timeout 120 --env TESSERA_TIMEOUT=60
                     --env TEST_PES_PER_HOST=${_pph} ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh
                     $<TARGET_FILE:pe_${_prog}> --gtest_brief=1)
    set_tests_properties(pe.${_prog}.hosts${layout} PROPERTIES LABELS "pe;hosts" TIMEOUT 120)
  endforeach()
endforeach()
# Puts of 64 KiB and up travel over Tessera's connections by default; UCX's active-message puts stay in use
# with the collectives' messages on UCX (TESSERA_NET_MESSAGES=ucx) and without the progress thread (which
# reads those connections): 3 hosts of one PE, each way.
foreach(group rma signal order)
  foreach(how net_ucx:TESSERA_NET_MESSAGES=ucx no_progress_thread:TESSERA_UCX_PROGRESS_THREAD=off)
    string(REPLACE ":" ";" _h ${how})
    list(GET _h 0 _name)
    list(GET _h 1 _env)
    add_test(NAME pe.pgas_${group}.hosts3x1_${_name}
             COMMAND ${TESSERA_RUN} -n 3 --timeout 120 --env TESSERA_TIMEOUT=60 --env TEST_PES_PER_HOST=1
                     --env ${_env} ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh $<TARGET_FILE:pe_pgas_${group}>
                     --gtest_brief=1)
    set_tests_properties(pe.pgas_${group}.hosts3x1_${_name} PROPERTIES LABELS "pe;hosts" TIMEOUT 120)
  endforeach()
endforeach()
# Sessions: small puts to other hosts held and sent in batches (transport/ucx/rma.cc), on one host and as
# hosts of one and two PEs, where the batches travel.
tessera_pe_test(pgas_session NPES 1 2 4 TIMEOUT 120 ENV TESSERA_TIMEOUT=60)
tessera_pe_hosts_test(pgas_session 2:1 3:1 4:2)
