# GNN aggregation (tessera/gnn.hpp) against a reference each PE computes: on one host at 1-4 PEs, and across
# hosts through pe/as_hosts.sh (2 hosts of 1 PE, 2 of 2, 3 PEs as 2+1): rows of other hosts by get.
tessera_pe_test(gnn NPES 1 2 3 4 TIMEOUT 120)
foreach(layout 2:1 4:2 3:2)
  string(REPLACE ":" ";" _l ${layout})
  list(GET _l 0 _n)
  list(GET _l 1 _pph)
  add_test(NAME pe.gnn.hosts${_n}pes${_pph}pph
           COMMAND ${TESSERA_RUN} -n ${_n} --timeout 300 --env TESSERA_TIMEOUT=60 --env TEST_PES_PER_HOST=${_pph}
                   ${CMAKE_CURRENT_SOURCE_DIR}/pe/as_hosts.sh $<TARGET_FILE:pe_gnn> --gtest_brief=1)
  set_tests_properties(pe.gnn.hosts${_n}pes${_pph}pph PROPERTIES LABELS "pe;hosts" TIMEOUT 300)
endforeach()
