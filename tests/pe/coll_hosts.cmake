# Collectives across hosts (coll/hier.h), on one machine through pe/as_hosts.sh: PES:PES_PER_HOST gives
# 2 and 3 hosts of one PE, 2 hosts of 2 (rails), 3 PEs as 2+1 (hosts of unequal size), 3 hosts of 2 and 4
# hosts of 2; once more with the deterministic mode. On one host (n1, n3) the same checks run through the engine.
# Small staging, so that the local steps chunk too.
tessera_pe_test(coll_hosts NPES 1 3 TIMEOUT 300 ENV TESSERA_TIMEOUT=60 TESSERA_BUFFSIZE=64K)
foreach(layout 2:1 3:1 4:2 3:2 6:2 8:2)
  string(REPLACE ":" ";" _l ${layout})
  list(GET _l 0 _n)
  list(GET _l 1 _pph)
  add_test(NAME pe.coll_hosts.hosts${_n}pes${_pph}pph
           COMMAND ${TESSERA_RUN} -n ${_n} --timeout 300 --env TESSERA_TIMEOUT=60 --env TESSERA_BUFFSIZE=64K
                   --env TEST_PES_PER_HOST=${_pph} ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh
                   $<TARGET_FILE:pe_coll_hosts> --gtest_brief=1)
  set_tests_properties(pe.coll_hosts.hosts${_n}pes${_pph}pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
endforeach()
foreach(layout 3:1 4:2)
  string(REPLACE ":" ";" _l ${layout})
  list(GET _l 0 _n)
  list(GET _l 1 _pph)
  add_test(NAME pe.coll_hosts_deterministic.hosts${_n}pes${_pph}pph
           COMMAND ${TESSERA_RUN} -n ${_n} --timeout 300 --env TESSERA_TIMEOUT=60 --env TESSERA_DETERMINISTIC=1
                   --env TEST_PES_PER_HOST=${_pph} ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh
                   $<TARGET_FILE:pe_coll_hosts> --gtest_brief=1 --gtest_filter=Hosts.Deterministic*:Hosts.Reductions*)
  set_tests_properties(pe.coll_hosts_deterministic.hosts${_n}pes${_pph}pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
endforeach()
# The collectives' messages between hosts over UCX's tagged messages instead of Tessera's TCP connections.
foreach(layout 3:1 4:2)
  string(REPLACE ":" ";" _l ${layout})
  list(GET _l 0 _n)
  list(GET _l 1 _pph)
  add_test(NAME pe.coll_hosts_ucx_messages.hosts${_n}pes${_pph}pph
           COMMAND ${TESSERA_RUN} -n ${_n} --timeout 300 --env TESSERA_TIMEOUT=60 --env TESSERA_NET_MESSAGES=ucx
                   --env TEST_PES_PER_HOST=${_pph} ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh
                   $<TARGET_FILE:pe_coll_hosts> --gtest_brief=1)
  set_tests_properties(pe.coll_hosts_ucx_messages.hosts${_n}pes${_pph}pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
endforeach()
# The OpenSHMEM collectives across hosts: teams, active sets, every reduction type.
foreach(group shmem_coll shmem_reduce shmem_active)
  foreach(layout 2:1 4:2 3:2)
    string(REPLACE ":" ";" _l ${layout})
    list(GET _l 0 _n)
    list(GET _l 1 _pph)
    add_test(NAME pe.${group}.hosts${_n}pes${_pph}pph
             COMMAND ${TESSERA_RUN} -n ${_n} --timeout 300 --env TESSERA_TIMEOUT=60
                     --env TEST_PES_PER_HOST=${_pph} ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh
                     $<TARGET_FILE:pe_${group}> --gtest_brief=1)
    set_tests_properties(pe.${group}.hosts${_n}pes${_pph}pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
  endforeach()
endforeach()
# Each allreduce row across hosts forced in every layout above by Hosts.EveryAllreduceRowAcrossHosts; here
# once more through TESSERA_ALGO (the user's way), which the reductions composed of allreduce follow too.
foreach(row rails leaders flat_ring)
  add_test(NAME pe.coll_hosts_${row}.hosts6pes2pph
           COMMAND ${TESSERA_RUN} -n 6 --timeout 300 --env TESSERA_TIMEOUT=60 --env TESSERA_ALGO=allreduce=${row}
                   --env TEST_PES_PER_HOST=2 ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh
                   $<TARGET_FILE:pe_coll_hosts> --gtest_brief=1 --gtest_filter=Hosts.Reductions*:Hosts.Allreduce*)
  set_tests_properties(pe.coll_hosts_${row}.hosts6pes2pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
endforeach()
# Hosts named by a rank table instead (PEs 0 and 2 on one host, 1 and 3 on the other: hosts that are not
# blocks of ranks), with the link given there, so nothing is measured.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/rank_table_2x2.json
     "{\"version\": 1, \"hosts\": [{\"name\": \"even\", \"pes\": [0, 2]}, {\"name\": \"odd\", \"pes\": [1, 3]}],\n"
     " \"link\": {\"latency_us\": 30, \"gbps\": 1.5}}\n")
foreach(prog pgas_rma coll_hosts)
  add_test(NAME pe.${prog}.rank_table
           COMMAND ${TESSERA_RUN} -n 4 --timeout 300 --env TESSERA_TIMEOUT=60
                   --env TESSERA_RANK_TABLE=${CMAKE_CURRENT_BINARY_DIR}/rank_table_2x2.json
                   $<TARGET_FILE:pe_${prog}> --gtest_brief=1)
  set_tests_properties(pe.${prog}.rank_table PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
endforeach()
