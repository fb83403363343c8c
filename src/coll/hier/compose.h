// What the rows across hosts run (Algorithm::compose; the table and costs: hier/rows.cc): the allreduce
// rows and the reductions composed of allreduce (hier/allreduce.cc), the rows that move data (hier/moves.cc).
#pragma once
#include "base/status.h"
#include "coll/hier/layer.h"

namespace tessera::coll::across {

Status allreduce_rails(Communicator& c, const Args& a);
Status allreduce_rails_rd(Communicator& c, const Args& a);
Status allreduce_leaders(Communicator& c, const Args& a);
Status allreduce_leaders_rd(Communicator& c, const Args& a);
Status allreduce_flat_ring(Communicator& c, const Args& a);
Status allreduce_gather_fold(Communicator& c, const Args& a);
Status reduce_via_allreduce(Communicator& c, const Args& a);
Status reduce_scatter(Communicator& c, const Args& a);
Status reduce_scatterv(Communicator& c, const Args& a);

Status allgather(Communicator& c, const Args& a);
Status allgatherv(Communicator& c, const Args& a);
Status allgather_coded(Communicator& c, const Args& a);
Status allgatherv_coded(Communicator& c, const Args& a);
Status broadcast_tree(Communicator& c, const Args& a);
Status gather(Communicator& c, const Args& a);
Status gatherv(Communicator& c, const Args& a);
Status scatter(Communicator& c, const Args& a);
Status scatterv(Communicator& c, const Args& a);
Status alltoall_exchange(Communicator& c, const Args& a);
Status alltoall_leaders(Communicator& c, const Args& a);
Status alltoallv_exchange(Communicator& c, const Args& a);
Status barrier_leaders(Communicator& c, const Args& a);
Status inscan(Communicator& c, const Args& a);
Status exscan(Communicator& c, const Args& a);

// Shared by the rows: every rank's `bytes` at `in`, packed by rank into `out` (n * bytes) on every rank;
// and every rank's input of `a` gathered, the first `upto` folded in rank order into a.recv (zeros for none).
Status allgather_packed(Communicator& c, Hier& h, const void* in, char* out, size_t bytes);
Status fold_in_rank_order(Communicator& c, Hier& h, const Args& a, size_t upto, Op op);

}  // namespace tessera::coll::across
