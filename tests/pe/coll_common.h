// Shared helpers of the collective PE tests: a world communicator, algorithm lists, typed buffers.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "coll/algo.h"
#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/reduce/reference.h"
#include "pgas/team.h"

namespace coll_test {
using namespace tessera::coll;

inline Communicator*& world_slot() {
  static Communicator* c = nullptr;
  return c;
}
inline Communicator& world() {
  Communicator*& c = world_slot();
  if (!c) {
    auto r = comm_create_team(tessera::pgas::team_world());
    if (!r.is_ok()) ADD_FAILURE() << r.status().message();
    c = r.value();
  }
  return *c;
}
// Destroys the world communicator inside RUN_ALL_TESTS (before shmem_finalize).
struct WorldEnv : testing::Environment {
  void TearDown() override {
    comm_destroy(world_slot());
    world_slot() = nullptr;
  }
};

// The rows of collective k for the world communicator's scope: the engine's on one host, the rows across
// hosts (Algorithm::compose) where the members span hosts.
inline std::vector<const Algorithm*> algos_of(Kind k) {
  std::vector<const Algorithm*> v;
  for (const Algorithm& a : algorithms())
    if (a.kind == k && (a.compose != nullptr) == (world().net != nullptr)) v.push_back(&a);
  return v;
}

inline void run(Communicator& c, Kind k, const Args& a, const Algorithm* algo = nullptr) {
  tessera::Status st = dispatch(c, k, a, algo);
  ASSERT_TRUE(st.is_ok()) << st.message();
}

// A buffer of `count` elements of type t.
struct Buf {
  DType t;
  std::vector<char> b;
  Buf(DType type, size_t count) : t(type), b(std::max<size_t>(count, 1) * dtype_size(type), 0) {}
  void* data() { return b.data(); }
  char* at(size_t i) { return b.data() + i * dtype_size(t); }
  void set(size_t i, double v) { ref::store(b.data(), i, t, v); }
  double get(size_t i) const { return ref::load(b.data(), i, t); }
};

// Data movement: element value identifies (source rank, position).
inline double val(int rank, size_t i) { return static_cast<double>((rank * 37 + i * 11) % 113); }

// Number of elements whose bytes differ from `expect` at [0, count).
inline size_t count_wrong(const char* got, const char* expect, size_t count, size_t es) {
  size_t w = 0;
  for (size_t i = 0; i < count; ++i) w += std::memcmp(got + i * es, expect + i * es, es) != 0;
  return w;
}

inline std::string trace(const Algorithm* a, size_t count, bool inplace, DType t, Op op) {
  return std::string(a ? a->name : "auto") + " count " + std::to_string(count) + (inplace ? " in-place " : " ") +
         dtype_name(t) + " " + op_name(op);
}

// Guard elements after every buffer check_reduction passes, filled with kSentinel and checked untouched.
inline constexpr size_t kGuardElems = 16;
inline constexpr char kSentinel = static_cast<char>(0xa5);

// Number of bytes of [p, p + bytes) that are not kSentinel.
inline size_t count_not_sentinel(const char* p, size_t bytes) {
  size_t w = 0;
  for (size_t i = 0; i < bytes; ++i) w += p[i] != kSentinel;
  return w;
}

// allreduce / reduce / reduce_scatter against the reference, for one (algorithm, count, type, op). Each
// buffer has exactly the elements the call reads or writes, then kGuardElems of kSentinel that must stay:
// out of place the output is count elements (reduce_scatter too), in place the input buffer. Out of place
// the send buffer must not change; a non-root's reduce receive buffer is not written (kRecvAtRoot): out of
// place it keeps its sentinel, in place the rank's input.
inline void check_reduction(Kind kind, const Algorithm* algo, size_t count, bool inplace, DType t, Op op, int root = 0) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  const size_t es = dtype_size(t);
  const size_t in_elems = kind == Kind::kReduceScatter ? count * n : count;
  const size_t guard = kGuardElems * es;
  Buf send(t, in_elems + kGuardElems), recv(t, (inplace ? in_elems : count) + kGuardElems), expect(t, count);
  // The send buffer's elements start zeroed: store() leaves a long double's 6 padding bytes as they are, and
  // a copy (1 member) carries them to the output, which is compared byte by byte with the zeroed expect.
  std::fill(send.b.begin() + in_elems * es, send.b.end(), kSentinel);
  std::fill(recv.b.begin(), recv.b.end(), kSentinel);
  for (size_t i = 0; i < in_elems; ++i) send.set(i, ref::input_value(r, i, t, op));
  const size_t off = kind == Kind::kReduceScatter ? static_cast<size_t>(r) * count : 0;
  for (size_t i = 0; i < count; ++i) ref::expected(expect.at(i), off + i, t, op, n);
  Args a;
  a.count = count;
  a.dtype = t;
  a.op = op;
  a.root = root;
  if (inplace) {
    recv.b = send.b;
    a.send = recv.data();
    // reduce_scatter in place (NCCL): the output is the rank's block of the input buffer.
    a.recv = recv.at(off);
  } else {
    a.send = send.data();
    a.recv = recv.data();
  }
  SCOPED_TRACE(trace(algo, count, inplace, t, op));
  const std::vector<char> sent = send.b;
  run(c, kind, a, algo);
  if (!inplace) {
    EXPECT_EQ(count_wrong(send.b.data(), sent.data(), in_elems, es), 0u) << "send buffer changed";
    EXPECT_EQ(count_not_sentinel(send.at(in_elems), guard), 0u) << "written past the send buffer";
  }
  const size_t recv_elems = inplace ? in_elems : count;
  EXPECT_EQ(count_not_sentinel(recv.at(recv_elems), guard), 0u) << "written past the receive buffer";
  if (kind == Kind::kReduce && r != root) {
    if (inplace) {
      EXPECT_EQ(count_wrong(recv.b.data(), sent.data(), in_elems, es), 0u) << "a non-root's buffer changed";
    } else {
      EXPECT_EQ(count_not_sentinel(recv.b.data(), count * es), 0u) << "a non-root's receive buffer was written";
    }
    return;
  }
  const char* got = static_cast<const char*>(a.recv);
  EXPECT_EQ(count_wrong(got, expect.at(0), count, es), 0u);
}

}  // namespace coll_test
