# The torch.distributed backend (python/), when it was built: every operation at 1-4 ranks under
# tessera-run and at 2 under torch's own launcher and under mpirun, errors, DDP training against one process, and torch 2's
# training stacks against gloo.
if(TESSERA_TORCH_BUILT)
  set(_py ${TESSERA_TORCH_PYTHON})
  set(_dir ${CMAKE_CURRENT_SOURCE_DIR}/torch)
  foreach(n 1 2 3 4)
    add_test(NAME torch.ops.n${n} COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 ${_py} ${_dir}/ops_test.py)
  endforeach()
  # torch's own launcher as a user types it (--standalone: a rendezvous on a free port of this host)
  add_test(NAME torch.ops.torchrun.n2
           COMMAND ${_py} -m torch.distributed.run --standalone --nproc_per_node 2 ${_dir}/ops_test.py)
  set_tests_properties(torch.ops.torchrun.n2 PROPERTIES ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python")
  add_test(NAME torch.ops.mpirun.n2 COMMAND bash ${_dir}/mpirun_torch.sh ${CMAKE_BINARY_DIR} ${_py} ${_dir}/ops_test.py)
  set_tests_properties(torch.ops.mpirun.n2 PROPERTIES SKIP_RETURN_CODE 77)
  foreach(n 2 3)
    add_test(NAME torch.errors.n${n} COMMAND ${TESSERA_RUN} -n ${n} --timeout 120 ${_py} ${_dir}/errors_test.py)
  endforeach()
  foreach(n 1 2 4)
    add_test(NAME torch.ddp.n${n} COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 ${_py} ${_dir}/ddp_test.py)
  endforeach()
  add_test(NAME torch.ddp.deterministic.n3
           COMMAND ${TESSERA_RUN} -n 3 --timeout 300 --env TESSERA_DETERMINISTIC=1 ${_py} ${_dir}/ddp_test.py)
  # What torch 2 users run (DDP with hooks, FSDP2, DeviceMesh/DTensor, functional collectives, torch.compile),
  # each against gloo or one process; bitwise equal across ranks under TESSERA_DETERMINISTIC=1.
  foreach(n 2 4)
    add_test(NAME torch.torch2.n${n} COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 ${_py} ${_dir}/torch2_test.py)
  endforeach()
  add_test(NAME torch.torch2.deterministic.n3
           COMMAND ${TESSERA_RUN} -n 3 --timeout 300 --env TESSERA_DETERMINISTIC=1 ${_py} ${_dir}/torch2_test.py)
  # torch.distributed._symmetric_memory on CPU (python/csrc/symm_mem.h): rendezvous, peer stores, signals,
  # one- and two-shot allreduce against gloo, and its errors.
  foreach(n 2 4)
    add_test(NAME torch.symm_mem.n${n} COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 ${_py} ${_dir}/symm_mem_test.py)
  endforeach()
  # Registered tensors (tessera_torch.register_tensor).
  foreach(n 2 4)
    add_test(NAME torch.register.n${n} COMMAND ${TESSERA_RUN} -n ${n} --timeout 300 ${_py} ${_dir}/register_test.py)
  endforeach()
  # Compressed gradient reductions (set_compression, compressed_allreduce_hook): on one host nothing is coded;
  # tests/hosts/torch_hosts_test.sh runs the same file across hosts, where it is.
  add_test(NAME torch.compress.n2 COMMAND ${TESSERA_RUN} -n 2 --timeout 300 ${_py} ${_dir}/compress_test.py)
  # Resilient mode: DDP goes on after a rank's death, and matches a fresh job of the survivors
  # (examples/torch/elastic_train.py).
  add_test(NAME torch.elastic COMMAND bash ${_dir}/elastic_test.sh ${CMAKE_BINARY_DIR} ${_py})
  get_property(_torch_tests DIRECTORY PROPERTY TESTS)
  list(FILTER _torch_tests INCLUDE REGEX "^torch\\.")
  set_tests_properties(${_torch_tests} PROPERTIES LABELS "torch;nosan" TIMEOUT 300)
endif()
