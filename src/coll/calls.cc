// The public APIs' calls: handle check, Args, run (calls.h).
#include "coll/calls.h"

#include "coll/p2p.h"

namespace tessera::coll::call {
namespace {
Args args(const void* s, void* r, size_t count, DType t, Op op = Op::kSum, int root = 0) {
  return {.send = s, .recv = r, .count = count, .dtype = t, .op = op, .root = root};
}
}  // namespace

Status allreduce(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kAllreduce, args(s, r, count, t, op));
}
Status reduce_scatter(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kReduceScatter, args(s, r, count, t, op));
}
Status reduce_scatterv(const char* routine, tesseraComm* h, const void* s, void* r, const size_t* rcounts, DType t,
                       Op op, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  Args a = args(s, r, rcounts ? rcounts[h->c->rank] : 0, t, op);
  a.rcounts = rcounts;
  return go(routine, *h->c, Kind::kReduceScatterv, a);
}
Status allgather(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kAllgather, args(s, r, count, t));
}
Status allgatherv(const char* routine, tesseraComm* h, const void* s, size_t count, void* r, const size_t* rcounts,
                  const size_t* displs, DType t, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  Args a = args(s, r, count, t);
  a.rcounts = rcounts;
  a.rdispls = displs;
  return go(routine, *h->c, Kind::kAllgatherv, a);
}
Status broadcast(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kBroadcast, args(s, r, count, t, Op::kSum, root));
}
Status reduce(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Op op, int root, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kReduce, args(s, r, count, t, op, root));
}
Status gather(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kGather, args(s, r, count, t, Op::kSum, root));
}
Status scatter(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, int root, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kScatter, args(s, r, count, t, Op::kSum, root));
}
Status gatherv(const char* routine, tesseraComm* h, const void* s, size_t count, void* r, const size_t* rcounts,
               const size_t* displs, DType t, int root, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  Args a = args(s, r, count, t, Op::kSum, root);
  a.rcounts = rcounts;
  a.rdispls = displs;
  return go(routine, *h->c, Kind::kGatherv, a);
}
Status scatterv(const char* routine, tesseraComm* h, const void* s, const size_t* scounts, const size_t* displs,
                void* r, size_t count, DType t, int root, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  Args a = args(s, r, count, t, Op::kSum, root);
  a.scounts = scounts;
  a.sdispls = displs;
  return go(routine, *h->c, Kind::kScatterv, a);
}
Status alltoall(const char* routine, tesseraComm* h, const void* s, void* r, size_t count, DType t, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kAlltoall, args(s, r, count, t));
}
Status alltoallv(const char* routine, tesseraComm* h, const void* s, const size_t* scounts, const size_t* sdispls,
                 void* r, const size_t* rcounts, const size_t* rdispls, DType t, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  Args a = args(s, r, 0, t);
  a.scounts = scounts;
  a.sdispls = sdispls;
  a.rcounts = rcounts;
  a.rdispls = rdispls;
  return go(routine, *h->c, Kind::kAlltoallv, a);
}
Status barrier(const char* routine, tesseraComm* h, Runner go) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  return go(routine, *h->c, Kind::kBarrier, Args{});
}

// send/recv go to p2p.h, not through dispatch: inside a group they are only queued.
Status send(const char* routine, tesseraComm* h, const void* buf, size_t count, DType t, int peer) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  if (!valid(t)) return invalid_arg("{}: datatype {} is not valid", routine, static_cast<int>(t));
  return p2p_send(*h->c, buf, count * dtype_size(t), peer);
}
Status recv(const char* routine, tesseraComm* h, void* buf, size_t count, DType t, int peer) {
  TS_RETURN_IF_ERROR(check_comm(routine, h));
  if (!valid(t)) return invalid_arg("{}: datatype {} is not valid", routine, static_cast<int>(t));
  return p2p_recv(*h->c, buf, count * dtype_size(t), peer);
}

}  // namespace tessera::coll::call
