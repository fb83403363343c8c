// The C++ API of coll.hpp: thin wrappers over the C API that throw tessera::coll::Error.
#include <tessera/coll.hpp>

#include <string>

#include "coll/types.h"

namespace tessera::coll {
namespace {
void check(tesseraResult_t r) {
  if (r != tesseraSuccess) throw Error(std::string(tesseraGetErrorString(r)) + ": " + tesseraGetLastError());
}
// Same numbering (pinned by static_asserts in capi/coll_api.cc).
tesseraDataType_t T(DataType t) { return static_cast<tesseraDataType_t>(t); }
tesseraRedOp_t O(RedOp o) { return static_cast<tesseraRedOp_t>(o); }
}  // namespace

Comm Comm::world() {
  tesseraComm_t h = nullptr;
  check(tesseraCommInitAll(&h));
  return Comm(h);
}
Comm Comm::from_team(shmem_team_t team) {
  tesseraComm_t h = nullptr;
  check(tesseraCommInitTeam(team, &h));
  return Comm(h);
}
Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    destroy();
    h_ = o.h_;
    o.h_ = nullptr;
  }
  return *this;
}
Comm Comm::split(int color, int key) const {
  tesseraComm_t h = nullptr;
  check(tesseraCommSplit(h_, color, key, &h));
  return Comm(h);
}
void Comm::destroy() {
  if (h_) {
    tesseraCommDestroy(h_);
    h_ = nullptr;
  }
}
int Comm::rank() const {
  int r = -1;
  check(tesseraCommUserRank(h_, &r));
  return r;
}
int Comm::size() const {
  int n = 0;
  check(tesseraCommCount(h_, &n));
  return n;
}
void Comm::allreduce(const void* s, void* r, size_t count, DataType t, RedOp op) {
  check(tesseraAllReduce(s, r, count, T(t), O(op), h_));
}
void Comm::reduce_scatter(const void* s, void* r, size_t count, DataType t, RedOp op) {
  check(tesseraReduceScatter(s, r, count, T(t), O(op), h_));
}
void Comm::reduce_scatterv(const void* s, void* r, const size_t* counts, DataType t, RedOp op) {
  check(tesseraReduceScatterV(s, r, counts, T(t), O(op), h_));
}
void Comm::allgather(const void* s, void* r, size_t count, DataType t) { check(tesseraAllGather(s, r, count, T(t), h_)); }
void Comm::allgatherv(const void* s, size_t count, void* r, const size_t* counts, const size_t* displs, DataType t) {
  check(tesseraAllGatherV(s, count, r, counts, displs, T(t), h_));
}
void Comm::broadcast(const void* s, void* r, size_t count, DataType t, int root) {
  check(tesseraBroadcast(s, r, count, T(t), root, h_));
}
void Comm::reduce(const void* s, void* r, size_t count, DataType t, RedOp op, int root) {
  check(tesseraReduce(s, r, count, T(t), O(op), root, h_));
}
void Comm::gather(const void* s, void* r, size_t count, DataType t, int root) { check(tesseraGather(s, r, count, T(t), root, h_)); }
void Comm::scatter(const void* s, void* r, size_t count, DataType t, int root) { check(tesseraScatter(s, r, count, T(t), root, h_)); }
void Comm::gatherv(const void* s, size_t count, void* r, const size_t* counts, const size_t* displs, DataType t,
                   int root) {
  check(tesseraGatherV(s, count, r, counts, displs, T(t), root, h_));
}
void Comm::scatterv(const void* s, const size_t* counts, const size_t* displs, void* r, size_t count, DataType t,
                    int root) {
  check(tesseraScatterV(s, counts, displs, r, count, T(t), root, h_));
}
void Comm::alltoall(const void* s, void* r, size_t count, DataType t) { check(tesseraAllToAll(s, r, count, T(t), h_)); }
void Comm::alltoallv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc, const size_t* rd, DataType t) {
  check(tesseraAllToAllV(s, sc, sd, r, rc, rd, T(t), h_));
}
void Comm::barrier() { check(tesseraBarrier(h_)); }
void Comm::send(const void* buf, size_t count, DataType t, int peer) { check(tesseraSend(buf, count, T(t), peer, h_)); }
void Comm::recv(void* buf, size_t count, DataType t, int peer) { check(tesseraRecv(buf, count, T(t), peer, h_)); }

namespace {
std::string item(const char* coll, size_t count, DataType t) {
  return std::string(coll) + " of " + std::to_string(count) + " " + dtype_name(static_cast<DType>(t));
}
}  // namespace

// The work captures the handle, not the Comm object, so moving the Comm while work is queued is harmless.
// Destroying it is collective and must wait until the stream is synchronized.
void Comm::allreduce(const void* s, void* r, size_t count, DataType t, RedOp op, Stream& st) {
  st.enqueue(item("allreduce", count, t), [=, h = h_] { check(tesseraAllReduce(s, r, count, T(t), O(op), h)); });
}
void Comm::reduce_scatter(const void* s, void* r, size_t count, DataType t, RedOp op, Stream& st) {
  st.enqueue(item("reduce_scatter", count, t), [=, h = h_] { check(tesseraReduceScatter(s, r, count, T(t), O(op), h)); });
}
void Comm::allgather(const void* s, void* r, size_t count, DataType t, Stream& st) {
  st.enqueue(item("allgather", count, t), [=, h = h_] { check(tesseraAllGather(s, r, count, T(t), h)); });
}
void Comm::broadcast(const void* s, void* r, size_t count, DataType t, int root, Stream& st) {
  st.enqueue(item("broadcast", count, t), [=, h = h_] { check(tesseraBroadcast(s, r, count, T(t), root, h)); });
}
void Comm::reduce(const void* s, void* r, size_t count, DataType t, RedOp op, int root, Stream& st) {
  st.enqueue(item("reduce", count, t), [=, h = h_] { check(tesseraReduce(s, r, count, T(t), O(op), root, h)); });
}
void Comm::alltoall(const void* s, void* r, size_t count, DataType t, Stream& st) {
  st.enqueue(item("alltoall", count, t), [=, h = h_] { check(tesseraAllToAll(s, r, count, T(t), h)); });
}
void Comm::barrier(Stream& st) {
  st.enqueue("barrier", [h = h_] { check(tesseraBarrier(h)); });
}

Group::Group() { tesseraGroupStart(); }
Group::~Group() noexcept(false) { check(tesseraGroupEnd()); }

}  // namespace tessera::coll
