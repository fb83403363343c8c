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
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/coll.h>

namespace tessera::coll {

enum class DataType : uint8_t { kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat16, kBFloat16, kFloat32, kFloat64 };
enum class RedOp : uint8_t { kSum, kProd, kMin, kMax, kAvg };

// Storage types for 16-bit floats (bit patterns; arithmetic happens inside the library).
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

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Comm {
 public:
  // All PEs of the job, ranks = PE numbers. Collective over all PEs.
  static Comm world();
  // The members of an OpenSHMEM team, ranks = team PE numbers. Collective over the team.
  static Comm from_team(shmem_team_t team);

  Comm() = default;
  Comm(Comm&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() { destroy(); }

  // Members with the same color form a communicator, ordered by key then by rank here. Collective over
  // this communicator; color < 0 gives an empty Comm.
  Comm split(int color, int key) const;
  void destroy();  // collective; idempotent
  explicit operator bool() const { return h_ != nullptr; }
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
  void alltoall(const void* send, void* recv, size_t count, DataType t);
  void alltoallv(const void* send, const size_t* scounts, const size_t* sdispls, void* recv, const size_t* rcounts,
                 const size_t* rdispls, DataType t);
  void barrier();
  void send(const void* buf, size_t count, DataType t, int peer);
  void recv(void* buf, size_t count, DataType t, int peer);

  // Typed conveniences.
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

// Send/recv between construction and destruction progress together (tesseraGroupStart/End).
class Group {
 public:
  Group();
  ~Group() noexcept(false);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
};

}  // namespace tessera::coll
