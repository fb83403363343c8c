// Tessera collective communication library: C++ API (the C API is coll.h).
//
//   shmem_init();
//   {
//     tessera::coll::Comm comm = tessera::coll::Comm::world();
//     comm.allreduce(grad.data(), grad.data(), grad.size(), tessera::coll::RedOp::kSum);   // in place
//   }                                   // destroyed (collectively) before shmem_finalize
//   shmem_finalize();
//
// Contracts (see coll.h for counts, in-place conventions and arithmetic):
// - Every call is blocking and collective over the communicator's members, in the same order on all of
//   them; mismatches end the job with a message naming the collective, the ranks and the values.
// - Errors in arguments throw tessera::coll::Error with a message naming the value and the limit.
// - Comm is move-only; its destructor destroys it, which is collective (all members, same order, before
//   shmem_finalize). One thread at a time per communicator.
// - Group: an RAII scope in which send/recv are queued and progressed together at its end.
// - Stream / Event: ordered asynchronous work on a progress thread (the comm streams of NCCL and HCCL);
//   Bucketer: gradient bucketing on a stream, as data-parallel training does it. See the classes below.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <tessera/error.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <complex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/coll.h>
#include <tessera/dtypes.h>
#include <tessera/stream.hpp>

namespace tessera::coll {

/// Element types and reduction operators, generated from the one list (tessera/dtypes.h) and numbered as
/// listed, as coll.h's are: kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat16, kBFloat16, kFloat32,
/// kFloat64, kInt16, kUint16, kLongDouble, kComplex64, kComplex128; and kSum, kProd, kMin, kMax, kAvg, kBand,
/// kBor, kBxor. kBand/kBor/kBxor apply to integer types only; kMin/kMax not to complex types.
enum class DataType : uint8_t { TESSERA_DTYPES(TESSERA_LIST_ENUMERATOR) };
enum class RedOp : uint8_t { TESSERA_REDOPS(TESSERA_LIST_ENUMERATOR) };

/// Storage types for 16-bit floats (bit patterns; arithmetic happens inside the library).
struct half_t { uint16_t bits; };
struct bfloat16_t { uint16_t bits; };

template <typename T> struct DataTypeOf;
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = DataType::kUint8; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct DataTypeOf<uint32_t> { static constexpr DataType value = DataType::kUint32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct DataTypeOf<uint64_t> { static constexpr DataType value = DataType::kUint64; };
template <> struct DataTypeOf<half_t> { static constexpr DataType value = DataType::kFloat16; };
template <> struct DataTypeOf<bfloat16_t> { static constexpr DataType value = DataType::kBFloat16; };
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::kFloat32; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::kFloat64; };
template <> struct DataTypeOf<int16_t> { static constexpr DataType value = DataType::kInt16; };
template <> struct DataTypeOf<uint16_t> { static constexpr DataType value = DataType::kUint16; };
template <> struct DataTypeOf<long double> { static constexpr DataType value = DataType::kLongDouble; };
template <> struct DataTypeOf<std::complex<float>> { static constexpr DataType value = DataType::kComplex64; };
template <> struct DataTypeOf<std::complex<double>> { static constexpr DataType value = DataType::kComplex128; };

using Error = tessera::Error;  // one exception type for the whole C++ API (error.hpp)
using PeerFailure = tessera::PeerFailure;  // resilient mode: a member failed, or the communicator was revoked

/// Comm streams and events are the library's one kind of stream (tessera/stream.hpp): a collective and a
/// kernel enqueue on the same Stream type, and events join them in either direction.
using Stream = ::tessera::Stream;
using Event = ::tessera::Event;

/// A persistent plan of one collective (coll.h: tesseraAllReduceInit ... tesseraStart; MPI-4's persistent
/// collectives): made by a Comm's *_init call, collective as that call, with its arguments checked, its
/// algorithm chosen and its count arrays copied once; start() runs it (blocking, or on a stream). The buffers
/// are fixed, their contents read at each start. Each start is one collective call of the communicator.
/// Move-only; destruction frees it (local; starts already on a stream still run).
class Plan {
 public:
  Plan() = default;
  Plan(Plan&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Plan& operator=(Plan&& o) noexcept;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan();

  void start();           // runs the call, blocking
  void start(Stream& s);  // enqueues the call on s
  const char* algorithm() const;  // the algorithm it runs (tessera-info --coll)
  explicit operator bool() const { return h_ != nullptr; }
  tesseraPlan_t handle() const { return h_; }

 private:
  friend class Comm;
  explicit Plan(tesseraPlan_t h) : h_(h) {}
  tesseraPlan_t h_ = nullptr;
};

class Comm {
 public:
  /// All PEs of the job, ranks = PE numbers. Collective over all PEs.
  static Comm world();
  /// The members of an OpenSHMEM team, ranks = team PE numbers. Collective over the team.
  static Comm from_team(shmem_team_t team);
  /// The PEs `pes` (world numbers, in rank order), collective over them alone, not over the world: for
  /// frameworks whose groups are formed by their members only (torch.distributed.new_group, as
  /// ncclCommInitRank). `key` is the same on every member and differs between communicators made this way
  /// with the same members while they live; `barrier` is a barrier over the members (the framework's own,
  /// e.g. over its key-value store), called twice.
  static Comm from_pes(const std::vector<int>& pes, uint64_t key, const std::function<void()>& barrier);

  Comm() = default;
  Comm(Comm&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() { destroy(); }

  /// Members with the same color form a communicator, ordered by key then by rank here. Collective over
  /// this communicator; color < 0 gives an empty Comm.
  Comm split(int color, int key) const;
  void destroy();  // collective; idempotent
  /// Frees this member's part without a barrier, for owners that cannot make destruction collective
  /// (a handle freed by a garbage collector). Peers keep their own mappings, so nothing they read goes away;
  /// a later call of theirs on this communicator waits for this member until its deadline. Idempotent.
  void release();
  explicit operator bool() const { return h_ != nullptr; }

  /// Resilient mode (tessera-run --on-failure continue; docs/resilience.md, coll.h's tesseraCommRevoke):
  /// after a member fails, calls throw PeerFailure and the communicator is broken. revoke() makes every
  /// member's calls throw PeerFailure (revoked()); agree(flag) is collective over the survivors and returns
  /// the bitwise AND of their flags; shrink() agrees on the failed members and returns the communicator of
  /// the others; failed() lists the members this PE knows to have failed (world PEs, ascending). grow()
  /// takes in the replacements tessera-run --restarts started, which call join() (tesseraCommGrow).
  void revoke();
  int agree(int flag);
  Comm shrink();
  Comm grow();
  static Comm join();
  std::vector<int> failed() const;

  int rank() const;
  int size() const;
  tesseraComm_t handle() const { return h_; }

  void allreduce(const void* send, void* recv, size_t count, DataType t, RedOp op);
  void reduce_scatter(const void* send, void* recv, size_t recvcount, DataType t, RedOp op);
  void reduce_scatterv(const void* send, void* recv, const size_t* recvcounts, DataType t, RedOp op);
  void allgather(const void* send, void* recv, size_t sendcount, DataType t);
  void allgatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
                  DataType t);
  void broadcast(const void* send, void* recv, size_t count, DataType t, int root);
  void reduce(const void* send, void* recv, size_t count, DataType t, RedOp op, int root);
  void gather(const void* send, void* recv, size_t sendcount, DataType t, int root);
  void scatter(const void* send, void* recv, size_t recvcount, DataType t, int root);
  /// Counts and displacements (elements) are read at the root only (MPI_Gatherv / MPI_Scatterv).
  void gatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
               DataType t, int root);
  void scatterv(const void* send, const size_t* sendcounts, const size_t* displs, void* recv, size_t recvcount,
                DataType t, int root);
  void alltoall(const void* send, void* recv, size_t count, DataType t);
  void alltoallv(const void* send, const size_t* scounts, const size_t* sdispls, void* recv, const size_t* rcounts,
                 const size_t* rdispls, DataType t);
  void barrier();
  void send(const void* buf, size_t count, DataType t, int peer);
  void recv(void* buf, size_t count, DataType t, int peer);
  /// Receives the next message from whichever rank has one waiting and returns that rank (members on one
  /// host only; not inside a Group).
  int recv_any(void* buf, size_t count, DataType t);

  /// The same collectives enqueued on a stream: they return at once and run on the stream's thread.
  void allreduce(const void* send, void* recv, size_t count, DataType t, RedOp op, Stream& s);
  void reduce_scatter(const void* send, void* recv, size_t recvcount, DataType t, RedOp op, Stream& s);
  void allgather(const void* send, void* recv, size_t sendcount, DataType t, Stream& s);
  void broadcast(const void* send, void* recv, size_t count, DataType t, int root, Stream& s);
  void reduce(const void* send, void* recv, size_t count, DataType t, RedOp op, int root, Stream& s);
  void alltoall(const void* send, void* recv, size_t count, DataType t, Stream& s);
  void barrier(Stream& s);

  /// Compressed collectives across hosts (coll.h: tesseraCommSetCompression): collective.
  enum class Compression { kNone = 0, kBf16 = 1, kFp8 = 2, kInt8 = 3 };
  void set_compression(Compression mode, bool error_feedback = true);
  /// Float32 allgathers coded between hosts (coll.h: tesseraCommSetAllGatherCompression): collective.
  void set_allgather_compression(Compression mode);

  /// Registered buffers (coll.h: tesseraCommRegister): collective; returns the registration's handle.
  void* register_buffer(void* p, size_t bytes);
  void deregister_buffer(void* handle);

  /// Persistent plans of the same collectives (Plan; coll.h's tesseraAllReduceInit ...): collective.
  Plan allreduce_init(const void* send, void* recv, size_t count, DataType t, RedOp op);
  Plan reduce_scatter_init(const void* send, void* recv, size_t recvcount, DataType t, RedOp op);
  Plan reduce_scatterv_init(const void* send, void* recv, const size_t* recvcounts, DataType t, RedOp op);
  Plan allgather_init(const void* send, void* recv, size_t sendcount, DataType t);
  Plan allgatherv_init(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
                       DataType t);
  Plan broadcast_init(const void* send, void* recv, size_t count, DataType t, int root);
  Plan reduce_init(const void* send, void* recv, size_t count, DataType t, RedOp op, int root);
  Plan gather_init(const void* send, void* recv, size_t sendcount, DataType t, int root);
  Plan scatter_init(const void* send, void* recv, size_t recvcount, DataType t, int root);
  Plan gatherv_init(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
                    DataType t, int root);
  Plan scatterv_init(const void* send, const size_t* sendcounts, const size_t* displs, void* recv, size_t recvcount,
                     DataType t, int root);
  Plan alltoall_init(const void* send, void* recv, size_t count, DataType t);
  Plan alltoallv_init(const void* send, const size_t* scounts, const size_t* sdispls, void* recv,
                      const size_t* rcounts, const size_t* rdispls, DataType t);
  Plan barrier_init();

  /// Typed conveniences.
  template <typename T>
  void allreduce(const T* send, T* recv, size_t count, RedOp op = RedOp::kSum) {
    allreduce(send, recv, count, DataTypeOf<T>::value, op);
  }
  template <typename T>
  void allreduce(std::vector<T>& inout, RedOp op = RedOp::kSum) {
    allreduce(inout.data(), inout.data(), inout.size(), DataTypeOf<T>::value, op);
  }
  template <typename T>
  void broadcast(T* buf, size_t count, int root) {
    broadcast(buf, buf, count, DataTypeOf<T>::value, root);
  }
  template <typename T>
  void allgather(const T* send, T* recv, size_t sendcount) {
    allgather(send, recv, sendcount, DataTypeOf<T>::value);
  }

 private:
  explicit Comm(tesseraComm_t h) : h_(h) {}
  tesseraComm_t h_ = nullptr;
};

/// How a collective mismatch (members calling different collectives, counts, types, operators or roots at
/// the same point) is reported. Off (the default): the job ends with the message, on the member that saw
/// it. On: the call throws Error with the same message on every member that sees it (a framework turns it
/// into its own exception); the communicator is then out of step and can only be released. Process-wide.
void throw_on_mismatch(bool on);

/// Gradient bucketing, as data-parallel training does it: gradients are declared once, in the order the
/// backward pass produces them; in each step, mark_ready(i) says gradient i is final. Consecutive gradients
/// of one type are grouped into buckets of about `bucket_bytes` (a larger gradient is a bucket of its own);
/// once every gradient of bucket k is ready and buckets 0..k-1 have been launched, bucket k is allreduced
/// with `op` on the stream, so communication overlaps the rest of the backward pass: in place when its
/// gradients lie end to end in memory (views of one flat buffer: the fast way), else packed into one buffer
/// and unpacked afterwards on the stream's thread (two more copies of the bucket). finish() waits for every bucket
/// and makes the bucketer ready for the next step. Every member must declare the same gradients (counts and
/// types) in the same order; the collective's consistency check reports a mismatch. Marking a gradient twice
/// in one step, or finishing a step with unready gradients, throws Error naming them.
///
/// Time window (off when 0; the constructor without `window` takes TESSERA_BUCKET_WINDOW_US, in
/// microseconds): buckets are also cut by when their gradients become ready, so that a late gradient does
/// not hold back the allreduce of earlier ones. The first step runs on the size-only layout and records when
/// each gradient was marked ready; its finish() has rank 0 close a bucket before a gradient that became
/// ready more than `window` after the bucket's first one (as well as at the size cap and type changes),
/// broadcasts those cut points over the communicator (a blocking collective, after the stream has drained)
/// and every member rebuilds its layout from them, once: later steps keep it. Only rank 0's timings count,
/// so all members agree on the layout. Every member must use the same window (on or off), since only then do
/// all of them join that broadcast. bucket_count(), bucket_of() and bucket_in_place() describe the layout in
/// force: the size-only one until the first finish(), rank 0's afterwards.
class Bucketer {
 public:
  Bucketer(Comm& comm, Stream& stream, size_t bucket_bytes = size_t{25} << 20, RedOp op = RedOp::kAvg);
  /// `window` >= 0 (0: off), whatever TESSERA_BUCKET_WINDOW_US says; a negative one throws Error.
  Bucketer(Comm& comm, Stream& stream, size_t bucket_bytes, RedOp op, std::chrono::microseconds window);
  ~Bucketer();
  Bucketer(const Bucketer&) = delete;
  Bucketer& operator=(const Bucketer&) = delete;

  size_t add(void* data, size_t count, DataType t);  // returns the gradient's index
  void mark_ready(size_t index);
  /// Gradient i becomes final when `ready` completes (an event recorded on a compute stream after the kernel
  /// that writes it): the bucket's allreduce waits for it on the stream, and this call returns at once. With
  /// a time window, readiness is timed at this call, not at the event.
  void mark_ready(size_t index, const Event& ready);
  void finish();
  size_t bucket_count() const;  // after the first mark_ready (the layout is fixed then)
  size_t bucket_of(size_t index) const;
  bool bucket_in_place(size_t bucket) const;  // its gradients lie end to end: no packing

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

/// Send/recv between construction and destruction progress together (tesseraGroupStart/End).
class Group {
 public:
  Group();
  ~Group() noexcept(false);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
};

}  // namespace tessera::coll
