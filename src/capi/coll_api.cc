// The C API of coll.h: argument checks and Status -> tesseraResult_t, the message kept per thread.
#include <tessera/coll.h>
#include <tessera/coll.hpp>

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <vector>
#include <mutex>

#include "capi/handles.h"
#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/p2p.h"
#include "pgas/team.h"

using namespace tessera;
using namespace tessera::coll;

struct tesseraComm {
  uint64_t magic;
  Communicator* c;
};
struct tesseraStream {
  uint64_t magic;
  std::unique_ptr<tessera::coll::Stream> s;
};
struct tesseraEvent {
  uint64_t magic;
  tessera::coll::Event e;
};

namespace {
constexpr uint64_t kCommMagic = 0x7e55c0aa'11c0ffeeull;
constexpr uint64_t kDeadMagic = 0xdeadc0aa'deadbeefull;
thread_local std::string t_error;

tesseraResult_t to_result(const Status& st) {
  if (st.is_ok()) return tesseraSuccess;
  t_error = st.message();
  switch (st.code()) {
    case Code::kInvalidArgument: return tesseraInvalidArgument;
    case Code::kUnsupported: return tesseraUnsupported;
    case Code::kSystem:
    case Code::kOutOfMemory: return tesseraSystemError;
    default: return tesseraInternalError;
  }
}

tesseraResult_t bad_comm(const char* routine, tesseraComm_t comm) {
  if (!comm) return to_result(invalid_arg("{}: communicator is null", routine));
  if (comm->magic == kDeadMagic) return to_result(invalid_arg("{}: communicator {} was used after tesseraCommDestroy", routine, (void*)comm));
  return to_result(invalid_arg("{}: {} is not a communicator", routine, (void*)comm));
}

#define TS_COMM(routine, comm)                                           \
  if (!(comm) || (comm)->magic != kCommMagic) return bad_comm(routine, comm)

// Destroyed stream and event handles are kept, like communicator handles, so that late use is diagnosed.
// They stay listed here, reachable (a leak checker then has nothing to report).
void keep_dead_handle(void* h) {
  static std::mutex mu;
  static auto* kept = new std::vector<void*>;
  std::lock_guard lk(mu);
  kept->push_back(h);
}
constexpr uint64_t kStreamMagic = 0x57e4a0c0'11c0ffeeull, kEventMagic = 0xe7e47c0c'11c0ffeeull;
#define TS_STREAM(routine, st)                                                               \
  if (!(st) || (st)->magic != kStreamMagic)                                                  \
  return to_result(invalid_arg("{}: {} is not a stream (null, destroyed or never created)", routine, (void*)(st)))
#define TS_EVENT(routine, ev)                                                                \
  if (!(ev) || (ev)->magic != kEventMagic)                                                   \
  return to_result(invalid_arg("{}: {} is not an event (null, destroyed or never created)", routine, (void*)(ev)))

// A stream's failure, as a C result: the message goes to tesseraGetLastError.
tesseraResult_t stream_error(const std::exception& e) {
  t_error = e.what();
  return tesseraStreamError;
}

// Enqueues a blocking C call on a stream; a failing result fails the item with the call's own message.
template <typename Call>
tesseraResult_t enqueue(tesseraStream_t st, const char* what, Call call) {
  st->s->enqueue(what, [call] {
    tesseraResult_t r = call();
    if (r != tesseraSuccess)
      throw tessera::coll::Error(std::string(tesseraGetErrorString(r)) + ": " + tesseraGetLastError());
  });
  return tesseraSuccess;
}

tesseraResult_t make_comm(Result<Communicator*> r, tesseraComm_t* out) {
  if (!r.is_ok()) return to_result(r.status());
  *out = r.value() ? new tesseraComm{kCommMagic, r.value()} : nullptr;
  return tesseraSuccess;
}

tesseraResult_t run(tesseraComm_t comm, Kind kind, const Args& a) {
  Communicator& c = *comm->c;
  if (c.in_use.load(std::memory_order_relaxed))
    return to_result(invalid_arg("{}: {} is in use by another thread (work on a comm stream?): one thread at a time "
                                 "per communicator; synchronize the stream first", kind_name(kind), c.name));
  c.in_use.store(true, std::memory_order_relaxed);
  tesseraResult_t r = to_result(dispatch(c, kind, a));
  c.in_use.store(false, std::memory_order_release);
  return r;
}

// The public enums (coll.h for C, coll.hpp for C++; coll/api.cc casts the one to the other) and the
// internal ones (coll/types.h) convert by casts, so their numbering must agree value by value: pinned here.
struct TypeRow {
  tesseraDataType_t c;
  DataType cpp;
  DType internal;
};
constexpr TypeRow kTypeRows[] = {
    {tesseraInt8, DataType::kInt8, DType::kInt8},          {tesseraUint8, DataType::kUint8, DType::kUint8},
    {tesseraInt32, DataType::kInt32, DType::kInt32},       {tesseraUint32, DataType::kUint32, DType::kUint32},
    {tesseraInt64, DataType::kInt64, DType::kInt64},       {tesseraUint64, DataType::kUint64, DType::kUint64},
    {tesseraFloat16, DataType::kFloat16, DType::kFloat16}, {tesseraBfloat16, DataType::kBFloat16, DType::kBFloat16},
    {tesseraFloat32, DataType::kFloat32, DType::kFloat32}, {tesseraFloat64, DataType::kFloat64, DType::kFloat64},
    {tesseraInt16, DataType::kInt16, DType::kInt16},       {tesseraUint16, DataType::kUint16, DType::kUint16},
    {tesseraLongDouble, DataType::kLongDouble, DType::kLongDouble},
    {tesseraComplex64, DataType::kComplex64, DType::kComplex64},
    {tesseraComplex128, DataType::kComplex128, DType::kComplex128},
};
struct OpRow {
  tesseraRedOp_t c;
  RedOp cpp;
  Op internal;
};
constexpr OpRow kOpRows[] = {
    {tesseraSum, RedOp::kSum, Op::kSum}, {tesseraProd, RedOp::kProd, Op::kProd}, {tesseraMin, RedOp::kMin, Op::kMin},
    {tesseraMax, RedOp::kMax, Op::kMax}, {tesseraAvg, RedOp::kAvg, Op::kAvg}, {tesseraBand, RedOp::kBand, Op::kBand},
    {tesseraBor, RedOp::kBor, Op::kBor}, {tesseraBxor, RedOp::kBxor, Op::kBxor},
};
template <typename Row>
constexpr bool same_numbers(const Row& r) {
  return static_cast<int>(r.c) == static_cast<int>(r.internal) && static_cast<int>(r.cpp) == static_cast<int>(r.internal);
}
static_assert(std::size(kTypeRows) == kNumDTypes && tesseraNumTypes == kNumDTypes, "a data type is missing");
static_assert(std::size(kOpRows) == kNumOps && tesseraNumOps == kNumOps, "an operator is missing");
static_assert(std::ranges::all_of(kTypeRows, same_numbers<TypeRow>), "public and internal data types differ");
static_assert(std::ranges::all_of(kOpRows, same_numbers<OpRow>), "public and internal operators differ");

Args args(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op = tesseraSum, int root = 0) {
  Args a;
  a.send = s;
  a.recv = r;
  a.count = count;
  a.dtype = static_cast<DType>(t);
  a.op = static_cast<Op>(op);
  a.root = root;
  return a;
}
}  // namespace

extern "C" {

tesseraResult_t tesseraCommInitAll(tesseraComm_t* comm) {
  if (!comm) return to_result(invalid_arg("tesseraCommInitAll: comm is null"));
  if (!pgas::is_initialized()) return to_result(invalid_arg("tesseraCommInitAll: call shmem_init first"));
  return make_comm(comm_create_team(pgas::team_world()), comm);
}

tesseraResult_t tesseraCommInitTeam(shmem_team_t team, tesseraComm_t* comm) {
  if (!comm) return to_result(invalid_arg("tesseraCommInitTeam: comm is null"));
  if (!team || team->magic != capi::kTeamMagic || !team->team) return to_result(invalid_arg("tesseraCommInitTeam: not a valid team"));
  return make_comm(comm_create_team(team->team), comm);
}

tesseraResult_t tesseraCommSplit(tesseraComm_t comm, int color, int key, tesseraComm_t* newcomm) {
  TS_COMM("tesseraCommSplit", comm);
  if (!newcomm) return to_result(invalid_arg("tesseraCommSplit: newcomm is null"));
  return make_comm(comm_split(comm->c, color, key), newcomm);
}

tesseraResult_t tesseraCommDestroy(tesseraComm_t comm) {
  if (!comm) return tesseraSuccess;
  TS_COMM("tesseraCommDestroy", comm);
  comm_destroy(comm->c);
  comm->magic = kDeadMagic;  // the handle itself is kept (a few bytes) so that late use is diagnosed
  comm->c = nullptr;
  keep_dead_handle(comm);
  return tesseraSuccess;
}

tesseraResult_t tesseraCommCount(const tesseraComm_t comm, int* count) {
  TS_COMM("tesseraCommCount", comm);
  if (!count) return to_result(invalid_arg("tesseraCommCount: count is null"));
  *count = comm->c->size;
  return tesseraSuccess;
}
tesseraResult_t tesseraCommUserRank(const tesseraComm_t comm, int* rank) {
  TS_COMM("tesseraCommUserRank", comm);
  if (!rank) return to_result(invalid_arg("tesseraCommUserRank: rank is null"));
  *rank = comm->c->rank;
  return tesseraSuccess;
}

tesseraResult_t tesseraAllReduce(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, tesseraComm_t comm) {
  TS_COMM("tesseraAllReduce", comm);
  return run(comm, Kind::kAllreduce, args(s, r, count, t, op));
}
tesseraResult_t tesseraReduceScatter(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, tesseraComm_t comm) {
  TS_COMM("tesseraReduceScatter", comm);
  return run(comm, Kind::kReduceScatter, args(s, r, count, t, op));
}
tesseraResult_t tesseraReduceScatterV(const void* s, void* r, const size_t* rcounts, tesseraDataType_t t, tesseraRedOp_t op,
                                      tesseraComm_t comm) {
  TS_COMM("tesseraReduceScatterV", comm);
  Args a = args(s, r, rcounts ? rcounts[comm->c->rank] : 0, t, op);
  a.rcounts = rcounts;
  return run(comm, Kind::kReduceScatterv, a);
}
tesseraResult_t tesseraAllGather(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm) {
  TS_COMM("tesseraAllGather", comm);
  return run(comm, Kind::kAllgather, args(s, r, count, t));
}
tesseraResult_t tesseraAllGatherV(const void* s, size_t count, void* r, const size_t* rcounts, const size_t* displs,
                                  tesseraDataType_t t, tesseraComm_t comm) {
  TS_COMM("tesseraAllGatherV", comm);
  Args a = args(s, r, count, t);
  a.rcounts = rcounts;
  a.rdispls = displs;
  return run(comm, Kind::kAllgatherv, a);
}
tesseraResult_t tesseraBroadcast(const void* s, void* r, size_t count, tesseraDataType_t t, int root, tesseraComm_t comm) {
  TS_COMM("tesseraBroadcast", comm);
  return run(comm, Kind::kBroadcast, args(s, r, count, t, tesseraSum, root));
}
tesseraResult_t tesseraReduce(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, int root,
                              tesseraComm_t comm) {
  TS_COMM("tesseraReduce", comm);
  return run(comm, Kind::kReduce, args(s, r, count, t, op, root));
}
tesseraResult_t tesseraGather(const void* s, void* r, size_t count, tesseraDataType_t t, int root, tesseraComm_t comm) {
  TS_COMM("tesseraGather", comm);
  return run(comm, Kind::kGather, args(s, r, count, t, tesseraSum, root));
}
tesseraResult_t tesseraScatter(const void* s, void* r, size_t count, tesseraDataType_t t, int root, tesseraComm_t comm) {
  TS_COMM("tesseraScatter", comm);
  return run(comm, Kind::kScatter, args(s, r, count, t, tesseraSum, root));
}
tesseraResult_t tesseraGatherV(const void* s, size_t count, void* r, const size_t* rcounts, const size_t* displs,
                               tesseraDataType_t t, int root, tesseraComm_t comm) {
  TS_COMM("tesseraGatherV", comm);
  Args a = args(s, r, count, t, tesseraSum, root);
  a.rcounts = rcounts;
  a.rdispls = displs;
  return run(comm, Kind::kGatherv, a);
}
tesseraResult_t tesseraScatterV(const void* s, const size_t* scounts, const size_t* displs, void* r, size_t count,
                                tesseraDataType_t t, int root, tesseraComm_t comm) {
  TS_COMM("tesseraScatterV", comm);
  Args a = args(s, r, count, t, tesseraSum, root);
  a.scounts = scounts;
  a.sdispls = displs;
  return run(comm, Kind::kScatterv, a);
}
tesseraResult_t tesseraAllToAll(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm) {
  TS_COMM("tesseraAllToAll", comm);
  return run(comm, Kind::kAlltoall, args(s, r, count, t));
}
tesseraResult_t tesseraAllToAllV(const void* s, const size_t* scounts, const size_t* sdispls, void* r, const size_t* rcounts,
                                 const size_t* rdispls, tesseraDataType_t t, tesseraComm_t comm) {
  TS_COMM("tesseraAllToAllV", comm);
  Args a = args(s, r, 0, t);
  a.scounts = scounts;
  a.sdispls = sdispls;
  a.rcounts = rcounts;
  a.rdispls = rdispls;
  return run(comm, Kind::kAlltoallv, a);
}
tesseraResult_t tesseraBarrier(tesseraComm_t comm) {
  TS_COMM("tesseraBarrier", comm);
  return run(comm, Kind::kBarrier, Args{});
}

tesseraResult_t tesseraSend(const void* buf, size_t count, tesseraDataType_t t, int peer, tesseraComm_t comm) {
  TS_COMM("tesseraSend", comm);
  if (!valid(static_cast<DType>(t))) return to_result(invalid_arg("tesseraSend: datatype {} is not valid", static_cast<int>(t)));
  return to_result(p2p_send(*comm->c, buf, count * dtype_size(static_cast<DType>(t)), peer));
}
tesseraResult_t tesseraRecv(void* buf, size_t count, tesseraDataType_t t, int peer, tesseraComm_t comm) {
  TS_COMM("tesseraRecv", comm);
  if (!valid(static_cast<DType>(t))) return to_result(invalid_arg("tesseraRecv: datatype {} is not valid", static_cast<int>(t)));
  return to_result(p2p_recv(*comm->c, buf, count * dtype_size(static_cast<DType>(t)), peer));
}
tesseraResult_t tesseraGroupStart(void) {
  group_start();
  return tesseraSuccess;
}
tesseraResult_t tesseraGroupEnd(void) { return to_result(group_end()); }

tesseraResult_t tesseraStreamCreate(tesseraStream_t* stream) {
  if (!stream) return to_result(invalid_arg("tesseraStreamCreate: stream is null"));
  *stream = new tesseraStream{kStreamMagic, std::make_unique<tessera::coll::Stream>()};
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamDestroy(tesseraStream_t stream) {
  if (!stream) return tesseraSuccess;
  TS_STREAM("tesseraStreamDestroy", stream);
  stream->magic = kDeadMagic;
  stream->s.reset();  // ~Stream waits for the queue
  keep_dead_handle(stream);
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamSynchronize(tesseraStream_t stream) {
  TS_STREAM("tesseraStreamSynchronize", stream);
  try {
    stream->s->synchronize();
  } catch (const std::exception& e) {
    return stream_error(e);
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamWaitEvent(tesseraStream_t stream, tesseraEvent_t event) {
  TS_STREAM("tesseraStreamWaitEvent", stream);
  TS_EVENT("tesseraStreamWaitEvent", event);
  stream->s->wait(event->e);
  return tesseraSuccess;
}
tesseraResult_t tesseraEventCreate(tesseraEvent_t* event) {
  if (!event) return to_result(invalid_arg("tesseraEventCreate: event is null"));
  *event = new tesseraEvent{kEventMagic, {}};
  return tesseraSuccess;
}
tesseraResult_t tesseraEventDestroy(tesseraEvent_t event) {
  if (!event) return tesseraSuccess;
  TS_EVENT("tesseraEventDestroy", event);
  event->magic = kDeadMagic;
  event->e = tessera::coll::Event();
  keep_dead_handle(event);
  return tesseraSuccess;
}
tesseraResult_t tesseraEventRecord(tesseraEvent_t event, tesseraStream_t stream) {
  TS_EVENT("tesseraEventRecord", event);
  TS_STREAM("tesseraEventRecord", stream);
  event->e.record(*stream->s);
  return tesseraSuccess;
}
tesseraResult_t tesseraEventQuery(tesseraEvent_t event) {
  TS_EVENT("tesseraEventQuery", event);
  return event->e.query() ? tesseraSuccess : tesseraInProgress;
}
tesseraResult_t tesseraEventSynchronize(tesseraEvent_t event) {
  TS_EVENT("tesseraEventSynchronize", event);
  try {
    event->e.synchronize();
  } catch (const std::exception& e) {
    return stream_error(e);
  }
  return tesseraSuccess;
}

tesseraResult_t tesseraAllReduceAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op,
                                      tesseraComm_t comm, tesseraStream_t st) {
  TS_COMM("tesseraAllReduceAsync", comm);
  TS_STREAM("tesseraAllReduceAsync", st);
  return enqueue(st, "tesseraAllReduceAsync", [=] { return tesseraAllReduce(s, r, count, t, op, comm); });
}
tesseraResult_t tesseraReduceScatterAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op,
                                          tesseraComm_t comm, tesseraStream_t st) {
  TS_COMM("tesseraReduceScatterAsync", comm);
  TS_STREAM("tesseraReduceScatterAsync", st);
  return enqueue(st, "tesseraReduceScatterAsync", [=] { return tesseraReduceScatter(s, r, count, t, op, comm); });
}
tesseraResult_t tesseraAllGatherAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm,
                                      tesseraStream_t st) {
  TS_COMM("tesseraAllGatherAsync", comm);
  TS_STREAM("tesseraAllGatherAsync", st);
  return enqueue(st, "tesseraAllGatherAsync", [=] { return tesseraAllGather(s, r, count, t, comm); });
}
tesseraResult_t tesseraBroadcastAsync(const void* s, void* r, size_t count, tesseraDataType_t t, int root,
                                      tesseraComm_t comm, tesseraStream_t st) {
  TS_COMM("tesseraBroadcastAsync", comm);
  TS_STREAM("tesseraBroadcastAsync", st);
  return enqueue(st, "tesseraBroadcastAsync", [=] { return tesseraBroadcast(s, r, count, t, root, comm); });
}
tesseraResult_t tesseraReduceAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, int root,
                                   tesseraComm_t comm, tesseraStream_t st) {
  TS_COMM("tesseraReduceAsync", comm);
  TS_STREAM("tesseraReduceAsync", st);
  return enqueue(st, "tesseraReduceAsync", [=] { return tesseraReduce(s, r, count, t, op, root, comm); });
}
tesseraResult_t tesseraAllToAllAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm,
                                     tesseraStream_t st) {
  TS_COMM("tesseraAllToAllAsync", comm);
  TS_STREAM("tesseraAllToAllAsync", st);
  return enqueue(st, "tesseraAllToAllAsync", [=] { return tesseraAllToAll(s, r, count, t, comm); });
}
tesseraResult_t tesseraBarrierAsync(tesseraComm_t comm, tesseraStream_t st) {
  TS_COMM("tesseraBarrierAsync", comm);
  TS_STREAM("tesseraBarrierAsync", st);
  return enqueue(st, "tesseraBarrierAsync", [=] { return tesseraBarrier(comm); });
}

const char* tesseraGetErrorString(tesseraResult_t r) {
  switch (r) {
    case tesseraSuccess: return "success";
    case tesseraInvalidArgument: return "invalid argument";
    case tesseraUnsupported: return "unsupported";
    case tesseraSystemError: return "system error";
    case tesseraInternalError: return "internal error";
    case tesseraStreamError: return "a work item of the stream failed";
    case tesseraInProgress: return "in progress";
  }
  return "unknown result code";
}
const char* tesseraGetLastError(void) { return t_error.c_str(); }

}  // extern "C"
