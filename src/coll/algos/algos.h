// The run() functions of every algorithm (records in registry.cc). Each returns the number of steps it
// used; the contract of a run() is in engine.h (steps, slots) and algo.h (Args).
#pragma once
#include <cstdint>

#include "coll/algo.h"

namespace tessera::coll::algos {
uint64_t allreduce_oneshot(Exec&, const Args&);
uint64_t allreduce_direct(Exec&, const Args&);
uint64_t allreduce_ring(Exec&, const Args&);
uint64_t allreduce_rhd(Exec&, const Args&);
uint64_t allreduce_dbtree(Exec&, const Args&);
uint64_t allreduce_ll(Exec&, const Args&);
uint64_t allgather_ll(Exec&, const Args&);
uint64_t broadcast_ll(Exec&, const Args&);
uint64_t reduce_ll(Exec&, const Args&);
uint64_t alltoall_ll(Exec&, const Args&);
uint64_t reduce_scatter_ll(Exec&, const Args&);
uint64_t gather_ll(Exec&, const Args&);
uint64_t scatter_ll(Exec&, const Args&);
uint64_t reduce_scatter_direct(Exec&, const Args&);
uint64_t reduce_scatter_ring(Exec&, const Args&);
uint64_t reduce_scatterv_direct(Exec&, const Args&);
uint64_t allgather_direct(Exec&, const Args&);
uint64_t allgather_ring(Exec&, const Args&);
uint64_t allgather_bruck(Exec&, const Args&);
uint64_t allgatherv_direct(Exec&, const Args&);
uint64_t broadcast_direct(Exec&, const Args&);
uint64_t broadcast_chain(Exec&, const Args&);
uint64_t reduce_oneshot(Exec&, const Args&);
uint64_t reduce_direct(Exec&, const Args&);
uint64_t gather_direct(Exec&, const Args&);
uint64_t scatter_direct(Exec&, const Args&);
uint64_t gatherv_direct(Exec&, const Args&);
uint64_t scatterv_direct(Exec&, const Args&);
uint64_t alltoall_direct(Exec&, const Args&);
uint64_t alltoall_pairwise(Exec&, const Args&);
uint64_t alltoall_bruck(Exec&, const Args&);
uint64_t alltoallv_direct(Exec&, const Args&);
uint64_t inscan_direct(Exec&, const Args&);
uint64_t exscan_direct(Exec&, const Args&);
uint64_t barrier_flat(Exec&, const Args&);
uint64_t barrier_dissemination(Exec&, const Args&);
// The direct algorithms with their zero-copy path for symmetric buffers (algos/zcopy.cc).
uint64_t allreduce_direct_zc(Exec&, const Args&);
uint64_t reduce_scatter_direct_zc(Exec&, const Args&);
uint64_t allgather_direct_zc(Exec&, const Args&);
uint64_t broadcast_direct_zc(Exec&, const Args&);
uint64_t alltoall_direct_zc(Exec&, const Args&);
// Single-copy algorithms (algos/cma.cc): need Shape::cma.
uint64_t allreduce_cma(Exec&, const Args&);
uint64_t reduce_scatter_cma(Exec&, const Args&);
uint64_t allgather_cma(Exec&, const Args&);
uint64_t broadcast_cma(Exec&, const Args&);
uint64_t broadcast_cma_split(Exec&, const Args&);
uint64_t alltoall_cma(Exec&, const Args&);
uint64_t barrier_ll(Exec&, const Args&);
// Direct reads and writes of symmetric buffers (algos/symmetric.cc): need Shape::symmetric.
uint64_t allreduce_symmetric(Exec&, const Args&);
uint64_t broadcast_symmetric(Exec&, const Args&);
uint64_t allgather_symmetric(Exec&, const Args&);
uint64_t allgatherv_symmetric(Exec&, const Args&);
uint64_t alltoall_symmetric(Exec&, const Args&);
uint64_t inscan_symmetric(Exec&, const Args&);
uint64_t exscan_symmetric(Exec&, const Args&);
}  // namespace tessera::coll::algos
