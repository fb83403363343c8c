// The C API of coll.h: a thin layer on the calls of coll/calls.h and the handles of coll/handle.h (the C++
// API of coll/api.cc sits beside it on the same functions): argument checks of its own, enum casts, and
// Status -> tesseraResult_t, the message kept per thread for tesseraGetLastError.
#include <tessera/coll.h>
#include <tessera/coll.hpp>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "capi/last_error.h"
#include "coll/calls.h"
#include "coll/handle.h"
#include "coll/hier.h"
#include "coll/p2p.h"
#include "coll/plan.h"
#include "coll/register.h"
#include "coll/types.h"

namespace tessera::capi {
std::string& last_error() {
  thread_local std::string text;
  return text;
}
tesseraResult_t to_result(const Status& st) {
  if (st.is_ok()) return tesseraSuccess;
  last_error() = st.message();
  return coll::result_of(st);
}
}  // namespace tessera::capi

using namespace tessera;
using namespace tessera::coll;

namespace {
using capi::to_result;

// A stream's failure, as a C result: the message goes to tesseraGetLastError.
tesseraResult_t stream_error(const std::exception& e) {
  capi::last_error() = e.what();
  return tesseraStreamError;
}

// Enqueues a blocking call on a stream; a failing Status fails the item with the call's own message. `call`
// takes the Runner its calls.h function runs with. On a capturing stream the call is made into a persistent
// plan now (collective, as the capture is on every member) and the plan's start is what the graph records.
template <typename Call>
tesseraResult_t enqueue(tesseraComm_t comm, tesseraStream_t st, const char* what, Call call) {
  if (st->s->capturing()) {
    Result<tesseraPlan*> p = plan_init(what, comm, call);
    if (!p.is_ok()) return to_result(p.status());
    plan_enqueue(*st->s, p.value()->p);
    plan_free(p.value());
    return tesseraSuccess;
  }
  st->s->enqueue(what, [call] { throw_if_error(call(&run)); });
  return tesseraSuccess;
}

tesseraResult_t opened(Result<tesseraComm*> r, tesseraComm_t* out) {
  if (!r.is_ok()) return to_result(r.status());
  *out = r.value();
  return tesseraSuccess;
}

DType T(tesseraDataType_t t) { return static_cast<DType>(t); }
Op O(tesseraRedOp_t o) { return static_cast<Op>(o); }

// The public enums (coll.h for C, coll.hpp for C++) and the internal ones (the list of tessera/dtypes.h, as
// base/dtype.h declares it) convert by casts (here and in coll/api.cc), so their numbering must agree value
// by value: pinned here. coll.hpp's enums are generated from the list; coll.h's keep their C spelling.
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
// coll.hpp's DataTypeOf<T> picks the type of a C++ element; its size must be the list's.
template <typename... T>
constexpr bool sizes_agree() {
  return ((sizeof(T) == dtype_size(static_cast<DType>(DataTypeOf<T>::value))) && ...);
}
static_assert(sizes_agree<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t, half_t, bfloat16_t,
                          float, double, long double, std::complex<float>, std::complex<double>>(),
              "coll.hpp's DataTypeOf names a type of another size");

}  // namespace

extern "C" {

// Returns a failed check as the routine's result (the message names the routine).
#define TS_CHECK(expr)                                   \
  if (Status _ts_st = (expr); !_ts_st.is_ok()) [[unlikely]] \
  return to_result(_ts_st)

tesseraResult_t tesseraCommInitAll(tesseraComm_t* comm) {
  if (!comm) return to_result(invalid_arg("tesseraCommInitAll: comm is null"));
  return opened(open_world("tesseraCommInitAll"), comm);
}
tesseraResult_t tesseraCommInitTeam(shmem_team_t team, tesseraComm_t* comm) {
  if (!comm) return to_result(invalid_arg("tesseraCommInitTeam: comm is null"));
  return opened(open_team("tesseraCommInitTeam", team), comm);
}
tesseraResult_t tesseraCommSplit(tesseraComm_t comm, int color, int key, tesseraComm_t* newcomm) {
  TS_CHECK(check_comm("tesseraCommSplit", comm));
  if (!newcomm) return to_result(invalid_arg("tesseraCommSplit: newcomm is null"));
  return opened(open_split("tesseraCommSplit", comm, color, key), newcomm);
}
tesseraResult_t tesseraCommDestroy(tesseraComm_t comm) {
  if (!comm) return tesseraSuccess;
  TS_CHECK(check_comm("tesseraCommDestroy", comm));
  close_comm(comm);
  return tesseraSuccess;
}

tesseraResult_t tesseraCommCount(const tesseraComm_t comm, int* count) {
  TS_CHECK(check_comm("tesseraCommCount", comm));
  if (!count) return to_result(invalid_arg("tesseraCommCount: count is null"));
  *count = comm->c->size;
  return tesseraSuccess;
}
tesseraResult_t tesseraCommUserRank(const tesseraComm_t comm, int* rank) {
  TS_CHECK(check_comm("tesseraCommUserRank", comm));
  if (!rank) return to_result(invalid_arg("tesseraCommUserRank: rank is null"));
  *rank = comm->c->rank;
  return tesseraSuccess;
}

tesseraResult_t tesseraAllReduce(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, tesseraComm_t comm) {
  return to_result(call::allreduce("tesseraAllReduce", comm, s, r, count, T(t), O(op)));
}
tesseraResult_t tesseraReduceScatter(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, tesseraComm_t comm) {
  return to_result(call::reduce_scatter("tesseraReduceScatter", comm, s, r, count, T(t), O(op)));
}
tesseraResult_t tesseraReduceScatterV(const void* s, void* r, const size_t* rcounts, tesseraDataType_t t, tesseraRedOp_t op,
                                      tesseraComm_t comm) {
  return to_result(call::reduce_scatterv("tesseraReduceScatterV", comm, s, r, rcounts, T(t), O(op)));
}
tesseraResult_t tesseraAllGather(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm) {
  return to_result(call::allgather("tesseraAllGather", comm, s, r, count, T(t)));
}
tesseraResult_t tesseraAllGatherV(const void* s, size_t count, void* r, const size_t* rcounts, const size_t* displs,
                                  tesseraDataType_t t, tesseraComm_t comm) {
  return to_result(call::allgatherv("tesseraAllGatherV", comm, s, count, r, rcounts, displs, T(t)));
}
tesseraResult_t tesseraBroadcast(const void* s, void* r, size_t count, tesseraDataType_t t, int root, tesseraComm_t comm) {
  return to_result(call::broadcast("tesseraBroadcast", comm, s, r, count, T(t), root));
}
tesseraResult_t tesseraReduce(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, int root,
                              tesseraComm_t comm) {
  return to_result(call::reduce("tesseraReduce", comm, s, r, count, T(t), O(op), root));
}
tesseraResult_t tesseraGather(const void* s, void* r, size_t count, tesseraDataType_t t, int root, tesseraComm_t comm) {
  return to_result(call::gather("tesseraGather", comm, s, r, count, T(t), root));
}
tesseraResult_t tesseraScatter(const void* s, void* r, size_t count, tesseraDataType_t t, int root, tesseraComm_t comm) {
  return to_result(call::scatter("tesseraScatter", comm, s, r, count, T(t), root));
}
tesseraResult_t tesseraGatherV(const void* s, size_t count, void* r, const size_t* rcounts, const size_t* displs,
                               tesseraDataType_t t, int root, tesseraComm_t comm) {
  return to_result(call::gatherv("tesseraGatherV", comm, s, count, r, rcounts, displs, T(t), root));
}
tesseraResult_t tesseraScatterV(const void* s, const size_t* scounts, const size_t* displs, void* r, size_t count,
                                tesseraDataType_t t, int root, tesseraComm_t comm) {
  return to_result(call::scatterv("tesseraScatterV", comm, s, scounts, displs, r, count, T(t), root));
}
tesseraResult_t tesseraAllToAll(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm) {
  return to_result(call::alltoall("tesseraAllToAll", comm, s, r, count, T(t)));
}
tesseraResult_t tesseraAllToAllV(const void* s, const size_t* scounts, const size_t* sdispls, void* r, const size_t* rcounts,
                                 const size_t* rdispls, tesseraDataType_t t, tesseraComm_t comm) {
  return to_result(call::alltoallv("tesseraAllToAllV", comm, s, scounts, sdispls, r, rcounts, rdispls, T(t)));
}
tesseraResult_t tesseraBarrier(tesseraComm_t comm) { return to_result(call::barrier("tesseraBarrier", comm)); }

tesseraResult_t tesseraSend(const void* buf, size_t count, tesseraDataType_t t, int peer, tesseraComm_t comm) {
  return to_result(call::send("tesseraSend", comm, buf, count, T(t), peer));
}
tesseraResult_t tesseraRecv(void* buf, size_t count, tesseraDataType_t t, int peer, tesseraComm_t comm) {
  return to_result(call::recv("tesseraRecv", comm, buf, count, T(t), peer));
}
tesseraResult_t tesseraGroupStart(void) {
  group_start();
  return tesseraSuccess;
}
tesseraResult_t tesseraGroupEnd(void) { return to_result(group_end()); }

tesseraResult_t tesseraStreamCreate(tesseraStream_t* stream) {
  if (!stream) return to_result(invalid_arg("tesseraStreamCreate: stream is null"));
  *stream = open_stream();
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamDestroy(tesseraStream_t stream) {
  if (!stream) return tesseraSuccess;
  TS_CHECK(check_stream("tesseraStreamDestroy", stream));
  close_stream(stream);
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamSynchronize(tesseraStream_t stream) {
  TS_CHECK(check_stream("tesseraStreamSynchronize", stream));
  try {
    stream->s->synchronize();
  } catch (const std::exception& e) {
    return stream_error(e);
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamWaitEvent(tesseraStream_t stream, tesseraEvent_t event) {
  TS_CHECK(check_stream("tesseraStreamWaitEvent", stream));
  TS_CHECK(check_event("tesseraStreamWaitEvent", event));
  try {
    stream->s->wait(event->e);
  } catch (const std::exception& e) {
    return to_result(invalid_arg("tesseraStreamWaitEvent: {}", e.what()));
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraEventCreate(tesseraEvent_t* event) {
  if (!event) return to_result(invalid_arg("tesseraEventCreate: event is null"));
  *event = open_event();
  return tesseraSuccess;
}
tesseraResult_t tesseraEventDestroy(tesseraEvent_t event) {
  if (!event) return tesseraSuccess;
  TS_CHECK(check_event("tesseraEventDestroy", event));
  close_event(event);
  return tesseraSuccess;
}
tesseraResult_t tesseraEventRecord(tesseraEvent_t event, tesseraStream_t stream) {
  TS_CHECK(check_event("tesseraEventRecord", event));
  TS_CHECK(check_stream("tesseraEventRecord", stream));
  try {
    event->e.record(*stream->s);
  } catch (const std::exception& e) {
    return to_result(invalid_arg("tesseraEventRecord: {}", e.what()));
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraEventQuery(tesseraEvent_t event) {
  TS_CHECK(check_event("tesseraEventQuery", event));
  return event->e.query() ? tesseraSuccess : tesseraInProgress;
}
tesseraResult_t tesseraEventSynchronize(tesseraEvent_t event) {
  TS_CHECK(check_event("tesseraEventSynchronize", event));
  try {
    event->e.synchronize();
  } catch (const std::exception& e) {
    return stream_error(e);
  }
  return tesseraSuccess;
}

// The handles are checked at enqueue time (the routine named is the Async one); the work names the
// blocking routine, as it runs that call.
#define TS_ASYNC(routine, comm, st)           \
  TS_CHECK(check_comm(routine, comm));        \
  TS_CHECK(check_stream(routine, st))

tesseraResult_t tesseraAllReduceAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op,
                                      tesseraComm_t comm, tesseraStream_t st) {
  TS_ASYNC("tesseraAllReduceAsync", comm, st);
  return enqueue(comm, st, "tesseraAllReduceAsync",
                 [=](call::Runner go) { return call::allreduce("tesseraAllReduce", comm, s, r, count, T(t), O(op), go); });
}
tesseraResult_t tesseraReduceScatterAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op,
                                          tesseraComm_t comm, tesseraStream_t st) {
  TS_ASYNC("tesseraReduceScatterAsync", comm, st);
  return enqueue(comm, st, "tesseraReduceScatterAsync",
                 [=](call::Runner go) { return call::reduce_scatter("tesseraReduceScatter", comm, s, r, count, T(t), O(op), go); });
}
tesseraResult_t tesseraAllGatherAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm,
                                      tesseraStream_t st) {
  TS_ASYNC("tesseraAllGatherAsync", comm, st);
  return enqueue(comm, st, "tesseraAllGatherAsync",
                 [=](call::Runner go) { return call::allgather("tesseraAllGather", comm, s, r, count, T(t), go); });
}
tesseraResult_t tesseraBroadcastAsync(const void* s, void* r, size_t count, tesseraDataType_t t, int root,
                                      tesseraComm_t comm, tesseraStream_t st) {
  TS_ASYNC("tesseraBroadcastAsync", comm, st);
  return enqueue(comm, st, "tesseraBroadcastAsync",
                 [=](call::Runner go) { return call::broadcast("tesseraBroadcast", comm, s, r, count, T(t), root, go); });
}
tesseraResult_t tesseraReduceAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, int root,
                                   tesseraComm_t comm, tesseraStream_t st) {
  TS_ASYNC("tesseraReduceAsync", comm, st);
  return enqueue(comm, st, "tesseraReduceAsync",
                 [=](call::Runner go) { return call::reduce("tesseraReduce", comm, s, r, count, T(t), O(op), root, go); });
}
tesseraResult_t tesseraAllToAllAsync(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm,
                                     tesseraStream_t st) {
  TS_ASYNC("tesseraAllToAllAsync", comm, st);
  return enqueue(comm, st, "tesseraAllToAllAsync",
                 [=](call::Runner go) { return call::alltoall("tesseraAllToAll", comm, s, r, count, T(t), go); });
}
tesseraResult_t tesseraStreamBeginCapture(tesseraStream_t stream) {
  TS_CHECK(check_stream("tesseraStreamBeginCapture", stream));
  try {
    stream->s->begin_capture();
  } catch (const std::exception& e) {
    return to_result(invalid_arg("tesseraStreamBeginCapture: {}", e.what()));
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraStreamEndCapture(tesseraStream_t stream, tesseraGraph_t* graph) {
  TS_CHECK(check_stream("tesseraStreamEndCapture", stream));
  if (!graph) return to_result(invalid_arg("tesseraStreamEndCapture: graph is null"));
  try {
    *graph = open_graph(stream->s->end_capture());
  } catch (const std::exception& e) {
    return to_result(invalid_arg("tesseraStreamEndCapture: {}", e.what()));
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraGraphLaunch(tesseraGraph_t graph, tesseraStream_t stream) {
  TS_CHECK(check_graph("tesseraGraphLaunch", graph));
  TS_CHECK(check_stream("tesseraGraphLaunch", stream));
  try {
    graph->g.launch(*stream->s);
  } catch (const std::exception& e) {
    return to_result(invalid_arg("tesseraGraphLaunch: {}", e.what()));
  }
  return tesseraSuccess;
}
tesseraResult_t tesseraGraphDestroy(tesseraGraph_t graph) {
  if (!graph) return tesseraSuccess;
  TS_CHECK(check_graph("tesseraGraphDestroy", graph));
  close_graph(graph);
  return tesseraSuccess;
}
tesseraResult_t tesseraBarrierAsync(tesseraComm_t comm, tesseraStream_t st) {
  TS_ASYNC("tesseraBarrierAsync", comm, st);
  return enqueue(comm, st, "tesseraBarrierAsync", [=](call::Runner go) { return call::barrier("tesseraBarrier", comm, go); });
}

tesseraResult_t tesseraCommRegister(tesseraComm_t comm, void* buff, size_t size, void** handle) {
  TS_CHECK(check_comm("tesseraCommRegister", comm));
  const Status refused = handle ? Status::ok() : invalid_arg("tesseraCommRegister: handle is null");
  Result<Registration*> r = exclusive("tesseraCommRegister", *comm->c, [&] {
    return register_buffer("tesseraCommRegister", *comm->c, buff, size, refused);
  });
  if (!r.is_ok()) return to_result(r.status());
  *handle = r.value();
  return tesseraSuccess;
}
tesseraResult_t tesseraCommSetCompression(tesseraComm_t comm, tesseraCompress_t mode, int error_feedback) {
  TS_CHECK(check_comm("tesseraCommSetCompression", comm));
  // The mode's bits as an int: a C caller may pass any value, which a load as the enum type would not allow.
  static_assert(sizeof(tesseraCompress_t) == sizeof(int));
  int m = 0;
  std::memcpy(&m, &mode, sizeof m);  // copy-ok: one word
  return to_result(exclusive("tesseraCommSetCompression", *comm->c, [&] {
    return set_compression("tesseraCommSetCompression", *comm->c, m, error_feedback != 0);
  }));
}
tesseraResult_t tesseraCommSetAllGatherCompression(tesseraComm_t comm, tesseraCompress_t mode) {
  TS_CHECK(check_comm("tesseraCommSetAllGatherCompression", comm));
  int m = 0;
  std::memcpy(&m, &mode, sizeof m);  // copy-ok: one word (as tesseraCommSetCompression's)
  return to_result(exclusive("tesseraCommSetAllGatherCompression", *comm->c, [&] {
    return set_allgather_compression("tesseraCommSetAllGatherCompression", *comm->c, m);
  }));
}
static_assert(tesseraCompressInt8 == static_cast<int>(Compress::kInt8) && tesseraCompressNone == 0,
              "coll.h's compression modes and hier/compress.h's differ");

tesseraResult_t tesseraCommDeregister(tesseraComm_t comm, void* handle) {
  TS_CHECK(check_comm("tesseraCommDeregister", comm));
  return to_result(exclusive("tesseraCommDeregister", *comm->c,
                             [&] { return deregister_buffer("tesseraCommDeregister", *comm->c, handle); }));
}

// Persistent plans (plan.h): each Init records the blocking call of the same arguments and makes its plan.
// A null place for the plan is refused in the exchange, as a bad argument is, so every member fails alike.
#define TS_INIT(routine, plan, call_expr)                                                                  \
  Result<tesseraPlan*> _ts_p = plan_init(routine, comm, [&](call::Runner go) { return call_expr; },        \
                                         (plan) ? Status::ok() : invalid_arg(routine ": plan is null"));   \
  if (!_ts_p.is_ok()) return to_result(_ts_p.status());                                                    \
  *(plan) = _ts_p.value();                                                                                 \
  return tesseraSuccess

tesseraResult_t tesseraAllReduceInit(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op,
                                     tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraAllReduceInit", plan, call::allreduce("tesseraAllReduceInit", comm, s, r, count, T(t), O(op), go));
}
tesseraResult_t tesseraReduceScatterInit(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op,
                                         tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraReduceScatterInit", plan,
          call::reduce_scatter("tesseraReduceScatterInit", comm, s, r, count, T(t), O(op), go));
}
tesseraResult_t tesseraReduceScatterVInit(const void* s, void* r, const size_t* rcounts, tesseraDataType_t t,
                                          tesseraRedOp_t op, tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraReduceScatterVInit", plan,
          call::reduce_scatterv("tesseraReduceScatterVInit", comm, s, r, rcounts, T(t), O(op), go));
}
tesseraResult_t tesseraAllGatherInit(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm,
                                     tesseraPlan_t* plan) {
  TS_INIT("tesseraAllGatherInit", plan, call::allgather("tesseraAllGatherInit", comm, s, r, count, T(t), go));
}
tesseraResult_t tesseraAllGatherVInit(const void* s, size_t count, void* r, const size_t* rcounts, const size_t* displs,
                                      tesseraDataType_t t, tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraAllGatherVInit", plan,
          call::allgatherv("tesseraAllGatherVInit", comm, s, count, r, rcounts, displs, T(t), go));
}
tesseraResult_t tesseraBroadcastInit(const void* s, void* r, size_t count, tesseraDataType_t t, int root,
                                     tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraBroadcastInit", plan, call::broadcast("tesseraBroadcastInit", comm, s, r, count, T(t), root, go));
}
tesseraResult_t tesseraReduceInit(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraRedOp_t op, int root,
                                  tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraReduceInit", plan, call::reduce("tesseraReduceInit", comm, s, r, count, T(t), O(op), root, go));
}
tesseraResult_t tesseraGatherInit(const void* s, void* r, size_t count, tesseraDataType_t t, int root,
                                  tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraGatherInit", plan, call::gather("tesseraGatherInit", comm, s, r, count, T(t), root, go));
}
tesseraResult_t tesseraScatterInit(const void* s, void* r, size_t count, tesseraDataType_t t, int root,
                                   tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraScatterInit", plan, call::scatter("tesseraScatterInit", comm, s, r, count, T(t), root, go));
}
tesseraResult_t tesseraGatherVInit(const void* s, size_t count, void* r, const size_t* rcounts, const size_t* displs,
                                   tesseraDataType_t t, int root, tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraGatherVInit", plan,
          call::gatherv("tesseraGatherVInit", comm, s, count, r, rcounts, displs, T(t), root, go));
}
tesseraResult_t tesseraScatterVInit(const void* s, const size_t* scounts, const size_t* displs, void* r, size_t count,
                                    tesseraDataType_t t, int root, tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraScatterVInit", plan,
          call::scatterv("tesseraScatterVInit", comm, s, scounts, displs, r, count, T(t), root, go));
}
tesseraResult_t tesseraAllToAllInit(const void* s, void* r, size_t count, tesseraDataType_t t, tesseraComm_t comm,
                                    tesseraPlan_t* plan) {
  TS_INIT("tesseraAllToAllInit", plan, call::alltoall("tesseraAllToAllInit", comm, s, r, count, T(t), go));
}
tesseraResult_t tesseraAllToAllVInit(const void* s, const size_t* scounts, const size_t* sdispls, void* r,
                                     const size_t* rcounts, const size_t* rdispls, tesseraDataType_t t,
                                     tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraAllToAllVInit", plan,
          call::alltoallv("tesseraAllToAllVInit", comm, s, scounts, sdispls, r, rcounts, rdispls, T(t), go));
}
tesseraResult_t tesseraBarrierInit(tesseraComm_t comm, tesseraPlan_t* plan) {
  TS_INIT("tesseraBarrierInit", plan, call::barrier("tesseraBarrierInit", comm, go));
}
#undef TS_INIT

tesseraResult_t tesseraStart(tesseraPlan_t plan, tesseraStream_t stream) {
  TS_CHECK(check_plan("tesseraStart", plan));
  if (!stream) return to_result(plan_run("tesseraStart", *plan->p));
  TS_CHECK(check_stream("tesseraStart", stream));
  plan_enqueue(*stream->s, plan->p);
  return tesseraSuccess;
}
tesseraResult_t tesseraPlanFree(tesseraPlan_t plan) {
  if (!plan) return tesseraSuccess;
  TS_CHECK(check_plan("tesseraPlanFree", plan));
  plan_free(plan);
  return tesseraSuccess;
}
tesseraResult_t tesseraPlanAlgorithm(const tesseraPlan_t plan, const char** name) {
  TS_CHECK(check_plan("tesseraPlanAlgorithm", plan));
  if (!name) return to_result(invalid_arg("tesseraPlanAlgorithm: name is null"));
  *name = plan_row(*plan->p);
  return tesseraSuccess;
}

const char* tesseraGetErrorString(tesseraResult_t r) { return result_text(r); }
const char* tesseraGetLastError(void) { return capi::last_error().c_str(); }

}  // extern "C"
