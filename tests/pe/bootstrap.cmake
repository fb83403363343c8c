# Driven by tests/scripts/tcp_bootstrap_test.sh: a job wired by tessera_bootstrap_uid's unique id.
add_executable(pe_bootstrap_uid ${CMAKE_CURRENT_SOURCE_DIR}/pe/bootstrap_uid.c)
target_link_libraries(pe_bootstrap_uid PRIVATE tessera)
