// The C++ API of coll.hpp: the calls of calls.h, beside the C API rather than on top of it; a failure
// throws tessera::coll::Error worded as the C API words its last error ("invalid argument: tesseraAllReduce:
// ..."), the routine named being the C routine of the same call.
#include <tessera/coll.hpp>

#include <string>

#include "coll/calls.h"
#include "coll/engine.h"
#include "coll/handle.h"
#include "coll/resilience.h"
#include "coll/hier.h"
#include "coll/p2p.h"
#include "coll/plan.h"
#include "coll/register.h"
#include "coll/types.h"

namespace tessera::coll {
namespace {
// Same numbering (pinned by static_asserts in capi/coll_api.cc).
DType T(DataType t) { return static_cast<DType>(t); }
Op O(RedOp o) { return static_cast<Op>(o); }
tesseraComm_t opened(Result<tesseraComm*> r) {
  throw_if_error(r.status());
  return r.value();
}
}  // namespace

Comm Comm::world() { return Comm(opened(open_world("tesseraCommInitAll"))); }
Comm Comm::from_team(shmem_team_t team) { return Comm(opened(open_team("tesseraCommInitTeam", team))); }
Comm Comm::from_pes(const std::vector<int>& pes, uint64_t key, const std::function<void()>& barrier) {
  if (!barrier) throw Error("invalid argument: Comm::from_pes: the barrier is empty");
  return Comm(opened(open_pes("Comm::from_pes", pes, key, barrier)));
}
Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    destroy();
    h_ = o.h_;
    o.h_ = nullptr;
  }
  return *this;
}
Comm Comm::split(int color, int key) const { return Comm(opened(open_split("tesseraCommSplit", h_, color, key))); }
void Comm::destroy() {
  if (h_) {
    if (check_comm("tesseraCommDestroy", h_).is_ok()) close_comm(h_);
    h_ = nullptr;
  }
}
void Comm::release() {
  if (h_) {
    if (check_comm("Comm::release", h_).is_ok()) release_comm(h_);
    h_ = nullptr;
  }
}
void Comm::revoke() {
  throw_if_error(check_comm("Comm::revoke", h_));
  throw_if_error(coll::revoke(*h_->c));
}
int Comm::agree(int flag) {
  throw_if_error(check_comm("Comm::agree", h_));
  std::vector<int> failed;
  throw_if_error(coll::agree(*h_->c, &flag, &failed));
  return flag;
}
Comm Comm::shrink() { return Comm(opened(open_shrink("Comm::shrink", h_))); }
Comm Comm::grow() {
  throw_if_error(check_comm("Comm::grow", h_));
  return Comm(opened(open_grow("Comm::grow", h_)));
}
Comm Comm::join() { return Comm(opened(open_grow("Comm::join", nullptr))); }
std::vector<int> Comm::failed() const {
  throw_if_error(check_comm("Comm::failed", h_));
  return known_failed(*h_->c);
}
int Comm::rank() const {
  throw_if_error(check_comm("tesseraCommUserRank", h_));
  return h_->c->rank;
}
int Comm::size() const {
  throw_if_error(check_comm("tesseraCommCount", h_));
  return h_->c->size;
}
void Comm::allreduce(const void* s, void* r, size_t count, DataType t, RedOp op) {
  throw_if_error(call::allreduce("tesseraAllReduce", h_, s, r, count, T(t), O(op)));
}
void Comm::reduce_scatter(const void* s, void* r, size_t count, DataType t, RedOp op) {
  throw_if_error(call::reduce_scatter("tesseraReduceScatter", h_, s, r, count, T(t), O(op)));
}
void Comm::reduce_scatterv(const void* s, void* r, const size_t* counts, DataType t, RedOp op) {
  throw_if_error(call::reduce_scatterv("tesseraReduceScatterV", h_, s, r, counts, T(t), O(op)));
}
void Comm::allgather(const void* s, void* r, size_t count, DataType t) {
  throw_if_error(call::allgather("tesseraAllGather", h_, s, r, count, T(t)));
}
void Comm::allgatherv(const void* s, size_t count, void* r, const size_t* counts, const size_t* displs, DataType t) {
  throw_if_error(call::allgatherv("tesseraAllGatherV", h_, s, count, r, counts, displs, T(t)));
}
void Comm::broadcast(const void* s, void* r, size_t count, DataType t, int root) {
  throw_if_error(call::broadcast("tesseraBroadcast", h_, s, r, count, T(t), root));
}
void Comm::reduce(const void* s, void* r, size_t count, DataType t, RedOp op, int root) {
  throw_if_error(call::reduce("tesseraReduce", h_, s, r, count, T(t), O(op), root));
}
void Comm::gather(const void* s, void* r, size_t count, DataType t, int root) {
  throw_if_error(call::gather("tesseraGather", h_, s, r, count, T(t), root));
}
void Comm::scatter(const void* s, void* r, size_t count, DataType t, int root) {
  throw_if_error(call::scatter("tesseraScatter", h_, s, r, count, T(t), root));
}
void Comm::gatherv(const void* s, size_t count, void* r, const size_t* counts, const size_t* displs, DataType t,
                   int root) {
  throw_if_error(call::gatherv("tesseraGatherV", h_, s, count, r, counts, displs, T(t), root));
}
void Comm::scatterv(const void* s, const size_t* counts, const size_t* displs, void* r, size_t count, DataType t,
                    int root) {
  throw_if_error(call::scatterv("tesseraScatterV", h_, s, counts, displs, r, count, T(t), root));
}
void Comm::alltoall(const void* s, void* r, size_t count, DataType t) {
  throw_if_error(call::alltoall("tesseraAllToAll", h_, s, r, count, T(t)));
}
void Comm::alltoallv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc, const size_t* rd, DataType t) {
  throw_if_error(call::alltoallv("tesseraAllToAllV", h_, s, sc, sd, r, rc, rd, T(t)));
}
void Comm::barrier() { throw_if_error(call::barrier("tesseraBarrier", h_)); }
void Comm::send(const void* buf, size_t count, DataType t, int peer) {
  throw_if_error(call::send("tesseraSend", h_, buf, count, T(t), peer));
}
void Comm::recv(void* buf, size_t count, DataType t, int peer) {
  throw_if_error(call::recv("tesseraRecv", h_, buf, count, T(t), peer));
}
int Comm::recv_any(void* buf, size_t count, DataType t) {
  throw_if_error(check_comm("Comm::recv_any", h_));
  if (!valid(T(t))) throw Error("invalid argument: Comm::recv_any: datatype " + std::to_string(static_cast<int>(t)) + " is not valid");
  Result<int> r = p2p_recv_any(*h_->c, buf, count * dtype_size(T(t)));
  throw_if_error(r.status());
  return r.value();
}
void throw_on_mismatch(bool on) { set_mismatch_throws(on); }

namespace {
std::string item(const char* coll, size_t count, DataType t) {
  return std::string(coll) + " of " + std::to_string(count) + " " + dtype_name(T(t));
}
}  // namespace

// The work captures the handle, not the Comm object, so moving the Comm while work is queued is harmless.
// Destroying it is collective and must wait until the stream is synchronized. On a capturing stream the call
// becomes a persistent plan now (collective) and the graph records its start.
void Comm::allreduce(const void* s, void* r, size_t count, DataType t, RedOp op, Stream& st) {
  if (st.capturing()) return allreduce_init(s, r, count, t, op).start(st);
  st.enqueue(item("allreduce", count, t),
             [=, h = h_] { throw_if_error(call::allreduce("tesseraAllReduce", h, s, r, count, T(t), O(op))); });
}
void Comm::reduce_scatter(const void* s, void* r, size_t count, DataType t, RedOp op, Stream& st) {
  if (st.capturing()) return reduce_scatter_init(s, r, count, t, op).start(st);
  st.enqueue(item("reduce_scatter", count, t), [=, h = h_] {
    throw_if_error(call::reduce_scatter("tesseraReduceScatter", h, s, r, count, T(t), O(op)));
  });
}
void Comm::allgather(const void* s, void* r, size_t count, DataType t, Stream& st) {
  if (st.capturing()) return allgather_init(s, r, count, t).start(st);
  st.enqueue(item("allgather", count, t),
             [=, h = h_] { throw_if_error(call::allgather("tesseraAllGather", h, s, r, count, T(t))); });
}
void Comm::broadcast(const void* s, void* r, size_t count, DataType t, int root, Stream& st) {
  if (st.capturing()) return broadcast_init(s, r, count, t, root).start(st);
  st.enqueue(item("broadcast", count, t),
             [=, h = h_] { throw_if_error(call::broadcast("tesseraBroadcast", h, s, r, count, T(t), root)); });
}
void Comm::reduce(const void* s, void* r, size_t count, DataType t, RedOp op, int root, Stream& st) {
  if (st.capturing()) return reduce_init(s, r, count, t, op, root).start(st);
  st.enqueue(item("reduce", count, t),
             [=, h = h_] { throw_if_error(call::reduce("tesseraReduce", h, s, r, count, T(t), O(op), root)); });
}
void Comm::alltoall(const void* s, void* r, size_t count, DataType t, Stream& st) {
  if (st.capturing()) return alltoall_init(s, r, count, t).start(st);
  st.enqueue(item("alltoall", count, t),
             [=, h = h_] { throw_if_error(call::alltoall("tesseraAllToAll", h, s, r, count, T(t))); });
}
void Comm::barrier(Stream& st) {
  if (st.capturing()) return barrier_init().start(st);
  st.enqueue("barrier", [h = h_] { throw_if_error(call::barrier("tesseraBarrier", h)); });
}

void* Comm::register_buffer(void* p, size_t bytes) {
  throw_if_error(check_comm("Comm::register_buffer", h_));
  Result<Registration*> r = exclusive("tesseraCommRegister", *h_->c,
                                      [&] { return coll::register_buffer("tesseraCommRegister", *h_->c, p, bytes); });
  throw_if_error(r.status());
  return r.value();
}
void Comm::set_compression(Compression mode, bool error_feedback) {
  throw_if_error(check_comm("Comm::set_compression", h_));
  throw_if_error(exclusive("tesseraCommSetCompression", *h_->c, [&] {
    return coll::set_compression("tesseraCommSetCompression", *h_->c, static_cast<int>(mode), error_feedback);
  }));
}
void Comm::set_allgather_compression(Compression mode) {
  throw_if_error(check_comm("Comm::set_allgather_compression", h_));
  throw_if_error(exclusive("tesseraCommSetAllGatherCompression", *h_->c, [&] {
    return coll::set_allgather_compression("tesseraCommSetAllGatherCompression", *h_->c, static_cast<int>(mode));
  }));
}

void Comm::deregister_buffer(void* handle) {
  throw_if_error(check_comm("Comm::deregister_buffer", h_));
  throw_if_error(exclusive("tesseraCommDeregister", *h_->c,
                           [&] { return coll::deregister_buffer("tesseraCommDeregister", *h_->c, handle); }));
}

// ---- persistent plans (plan.h)
namespace {
template <typename Make>
tesseraPlan_t planned(const char* routine, tesseraComm_t h, Make make) {
  Result<tesseraPlan*> r = plan_init(routine, h, make);
  throw_if_error(r.status());
  return r.value();
}
}  // namespace

Plan Comm::allreduce_init(const void* s, void* r, size_t count, DataType t, RedOp op) {
  return Plan(planned("tesseraAllReduceInit", h_, [&](call::Runner go) {
    return call::allreduce("tesseraAllReduceInit", h_, s, r, count, T(t), O(op), go);
  }));
}
Plan Comm::reduce_scatter_init(const void* s, void* r, size_t count, DataType t, RedOp op) {
  return Plan(planned("tesseraReduceScatterInit", h_, [&](call::Runner go) {
    return call::reduce_scatter("tesseraReduceScatterInit", h_, s, r, count, T(t), O(op), go);
  }));
}
Plan Comm::reduce_scatterv_init(const void* s, void* r, const size_t* counts, DataType t, RedOp op) {
  return Plan(planned("tesseraReduceScatterVInit", h_, [&](call::Runner go) {
    return call::reduce_scatterv("tesseraReduceScatterVInit", h_, s, r, counts, T(t), O(op), go);
  }));
}
Plan Comm::allgather_init(const void* s, void* r, size_t count, DataType t) {
  return Plan(planned("tesseraAllGatherInit", h_, [&](call::Runner go) {
    return call::allgather("tesseraAllGatherInit", h_, s, r, count, T(t), go);
  }));
}
Plan Comm::allgatherv_init(const void* s, size_t count, void* r, const size_t* counts, const size_t* displs,
                           DataType t) {
  return Plan(planned("tesseraAllGatherVInit", h_, [&](call::Runner go) {
    return call::allgatherv("tesseraAllGatherVInit", h_, s, count, r, counts, displs, T(t), go);
  }));
}
Plan Comm::broadcast_init(const void* s, void* r, size_t count, DataType t, int root) {
  return Plan(planned("tesseraBroadcastInit", h_, [&](call::Runner go) {
    return call::broadcast("tesseraBroadcastInit", h_, s, r, count, T(t), root, go);
  }));
}
Plan Comm::reduce_init(const void* s, void* r, size_t count, DataType t, RedOp op, int root) {
  return Plan(planned("tesseraReduceInit", h_, [&](call::Runner go) {
    return call::reduce("tesseraReduceInit", h_, s, r, count, T(t), O(op), root, go);
  }));
}
Plan Comm::gather_init(const void* s, void* r, size_t count, DataType t, int root) {
  return Plan(planned("tesseraGatherInit", h_, [&](call::Runner go) {
    return call::gather("tesseraGatherInit", h_, s, r, count, T(t), root, go);
  }));
}
Plan Comm::scatter_init(const void* s, void* r, size_t count, DataType t, int root) {
  return Plan(planned("tesseraScatterInit", h_, [&](call::Runner go) {
    return call::scatter("tesseraScatterInit", h_, s, r, count, T(t), root, go);
  }));
}
Plan Comm::gatherv_init(const void* s, size_t count, void* r, const size_t* counts, const size_t* displs, DataType t,
                        int root) {
  return Plan(planned("tesseraGatherVInit", h_, [&](call::Runner go) {
    return call::gatherv("tesseraGatherVInit", h_, s, count, r, counts, displs, T(t), root, go);
  }));
}
Plan Comm::scatterv_init(const void* s, const size_t* counts, const size_t* displs, void* r, size_t count, DataType t,
                         int root) {
  return Plan(planned("tesseraScatterVInit", h_, [&](call::Runner go) {
    return call::scatterv("tesseraScatterVInit", h_, s, counts, displs, r, count, T(t), root, go);
  }));
}
Plan Comm::alltoall_init(const void* s, void* r, size_t count, DataType t) {
  return Plan(planned("tesseraAllToAllInit", h_, [&](call::Runner go) {
    return call::alltoall("tesseraAllToAllInit", h_, s, r, count, T(t), go);
  }));
}
Plan Comm::alltoallv_init(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                          const size_t* rd, DataType t) {
  return Plan(planned("tesseraAllToAllVInit", h_, [&](call::Runner go) {
    return call::alltoallv("tesseraAllToAllVInit", h_, s, sc, sd, r, rc, rd, T(t), go);
  }));
}
Plan Comm::barrier_init() {
  return Plan(planned("tesseraBarrierInit", h_, [&](call::Runner go) { return call::barrier("tesseraBarrierInit", h_, go); }));
}

Plan& Plan::operator=(Plan&& o) noexcept {
  if (this != &o) {
    if (h_ && check_plan("Plan", h_).is_ok()) plan_free(h_);
    h_ = o.h_;
    o.h_ = nullptr;
  }
  return *this;
}
Plan::~Plan() {
  if (h_ && check_plan("Plan", h_).is_ok()) plan_free(h_);
}
void Plan::start() {
  throw_if_error(check_plan("Plan::start", h_));
  throw_if_error(plan_run("tesseraStart", *h_->p));
}
void Plan::start(Stream& st) {
  throw_if_error(check_plan("Plan::start", h_));
  plan_enqueue(st, h_->p);
}
const char* Plan::algorithm() const {
  throw_if_error(check_plan("Plan::algorithm", h_));
  return plan_row(*h_->p);
}

Group::Group() { group_start(); }
Group::~Group() noexcept(false) { throw_if_error(group_end()); }

}  // namespace tessera::coll
