// The engine on symmetric buffers (Args::symmetric, the OpenSHMEM layer's calls): every algorithm that
// supports a symmetric shape (the in-place rows of algos/symmetric.cc and every staged, LL and single-copy
// row) forced in turn, for allreduce, broadcast, allgather, allgatherv, alltoall and both scans, over counts
// that cross the symmetric allreduce's whole/sliced threshold and the staging slot, in place where the
// collective allows it. Results against a reference computed here. Runs at 1-4 and 7 PEs (coll_symmetric.cmake).
#include <shmem.h>

#include <cstring>
#include <vector>

#include "coll_common.h"
#include "pe_main.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

const size_t kCounts[] = {0, 1, 13, 1000, 37003};

// Symmetric buffers of `bytes` each (the heap; freed collectively).
struct Sym {
  char* p;
  explicit Sym(size_t bytes) : p(static_cast<char*>(shmem_malloc(std::max<size_t>(bytes, 64)))) {}
  ~Sym() { shmem_free(p); }
};

Shape sym_shape(Kind k, size_t bytes) {
  Shape s = make_shape(world(), k, bytes);
  s.symmetric = true;
  return s;
}

std::vector<const Algorithm*> sym_algos(Kind k, size_t bytes) {
  std::vector<const Algorithm*> v;
  for (const Algorithm* a : algos_of(k))
    if (fits(*a, sym_shape(k, bytes))) v.push_back(a);
  return v;
}

// A call on `count` bytes.
Args bytes_args(const void* send, void* recv, size_t count) {
  return Args{.send = send, .recv = recv, .count = count, .dtype = DType::kUint8};
}

void run_sym(Kind k, Args a, const Algorithm* algo) {
  a.symmetric = true;
  run(world(), k, a, algo);
}

TEST(Symmetric, AllreduceEveryAlgorithmTypeAndInPlace) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  const DType types[] = {DType::kFloat32, DType::kInt16, DType::kLongDouble, DType::kComplex128, DType::kUint64};
  for (DType t : types)
    for (Op op : {Op::kSum, Op::kMax, Op::kBxor, Op::kProd})
      for (size_t count : kCounts) {
        if (!op_applies(t, op)) continue;
        const size_t es = dtype_size(t), bytes = count * es;
        Sym send(bytes), recv(bytes);
        std::vector<char> expect(std::max<size_t>(bytes, 1));
        for (size_t i = 0; i < count; ++i) ref::expected(expect.data() + i * es, i, t, op, n);
        for (const Algorithm* a : sym_algos(Kind::kAllreduce, bytes))
          for (bool ip : {false, true}) {
            SCOPED_TRACE(trace(a, count, ip, t, op));
            std::memset(send.p, 0, bytes);  // long double: a copy keeps the padding bytes as they are
            for (size_t i = 0; i < count; ++i) ref::store(send.p, i, t, ref::input_value(r, i, t, op));
            Args x;
            x.send = send.p;
            x.recv = ip ? send.p : recv.p;
            x.count = count;
            x.dtype = t;
            x.op = op;
            run_sym(Kind::kAllreduce, x, a);
            EXPECT_EQ(count_wrong(static_cast<const char*>(x.recv), expect.data(), count, es), 0u);
            shmem_barrier_all();  // the next round rewrites inputs peers may still read in slower algorithms
          }
      }
}

TEST(Symmetric, ScansEveryAlgorithmInPlaceAndNot) {
  Communicator& c = world();
  const int r = c.rank;
  for (Kind k : {Kind::kInscan, Kind::kExscan})
    for (DType t : {DType::kInt32, DType::kFloat64, DType::kComplex64})
      for (size_t count : kCounts) {
        const size_t es = dtype_size(t), bytes = count * es;
        Sym send(bytes), recv(bytes);
        std::vector<char> expect(std::max<size_t>(bytes, 1), 0);
        const int upto = k == Kind::kInscan ? r + 1 : r;
        for (size_t i = 0; i < count; ++i) {
          double v = 0;
          for (int m = 0; m < upto; ++m) v += ref::input_value(m, i, t, Op::kSum);
          ref::store(expect.data(), i, t, v);
        }
        for (const Algorithm* a : sym_algos(k, bytes))
          for (bool ip : {false, true}) {
            SCOPED_TRACE(std::string(kind_name(k)) + " " + trace(a, count, ip, t, Op::kSum));
            for (size_t i = 0; i < count; ++i) ref::store(send.p, i, t, ref::input_value(r, i, t, Op::kSum));
            Args x;
            x.send = send.p;
            x.recv = ip ? send.p : recv.p;
            x.count = count;
            x.dtype = t;
            run_sym(k, x, a);
            EXPECT_EQ(count_wrong(static_cast<const char*>(x.recv), expect.data(), count, es), 0u);
            shmem_barrier_all();
          }
      }
}

// A byte pattern that names the member and the position.
char pat(int m, size_t i) { return static_cast<char>(m * 31 + static_cast<int>(i % 251)); }

TEST(Symmetric, DataMovementEveryAlgorithm) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  const size_t N = static_cast<size_t>(n);
  for (size_t count : kCounts) {
    Sym send(count * N), recv(count * N);
    // broadcast from the last member; the root's own output too.
    for (const Algorithm* a : sym_algos(Kind::kBroadcast, count)) {
      SCOPED_TRACE(std::string("broadcast ") + a->name + " " + std::to_string(count));
      for (size_t i = 0; i < count; ++i) send.p[i] = pat(r, i);
      std::memset(recv.p, 0, count);
      Args x = bytes_args(send.p, recv.p, count);
      x.root = n - 1;
      run_sym(Kind::kBroadcast, x, a);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += recv.p[i] != pat(n - 1, i);
      EXPECT_EQ(wrong, 0u);
      shmem_barrier_all();
    }
    for (const Algorithm* a : sym_algos(Kind::kAllgather, count)) {
      SCOPED_TRACE(std::string("allgather ") + a->name + " " + std::to_string(count));
      for (size_t i = 0; i < count; ++i) send.p[i] = pat(r, i);
      std::memset(recv.p, 0, count * N);
      run_sym(Kind::kAllgather, bytes_args(send.p, recv.p, count), a);
      size_t wrong = 0;
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < count; ++i) wrong += recv.p[static_cast<size_t>(m) * count + i] != pat(m, i);
      EXPECT_EQ(wrong, 0u);
      shmem_barrier_all();
    }
    for (const Algorithm* a : sym_algos(Kind::kAlltoall, count)) {
      SCOPED_TRACE(std::string("alltoall ") + a->name + " " + std::to_string(count));
      // Piece j of member m's input: pat(m * n + j, i).
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < count; ++i) send.p[static_cast<size_t>(j) * count + i] = pat(r * n + j, i);
      std::memset(recv.p, 0, count * N);
      run_sym(Kind::kAlltoall, bytes_args(send.p, recv.p, count), a);
      size_t wrong = 0;
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < count; ++i) wrong += recv.p[static_cast<size_t>(m) * count + i] != pat(m * n + r, i);
      EXPECT_EQ(wrong, 0u);
      shmem_barrier_all();
    }
    // allgatherv: member m contributes count + m bytes (collect's uneven pieces), packed in rank order.
    std::vector<size_t> counts(N), displs(N);
    size_t total = 0;
    for (size_t m = 0; m < N; ++m) counts[m] = count + m, displs[m] = total, total += counts[m];
    Sym vsend(count + N), vrecv(total);
    for (const Algorithm* a : sym_algos(Kind::kAllgatherv, total / N)) {
      SCOPED_TRACE(std::string("allgatherv ") + a->name + " " + std::to_string(count));
      for (size_t i = 0; i < counts[static_cast<size_t>(r)]; ++i) vsend.p[i] = pat(r, i);
      std::memset(vrecv.p, 0, total);
      Args x = bytes_args(vsend.p, vrecv.p, counts[static_cast<size_t>(r)]);
      x.rcounts = counts.data();
      x.rdispls = displs.data();
      run_sym(Kind::kAllgatherv, x, a);
      size_t wrong = 0;
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < counts[static_cast<size_t>(m)]; ++i) wrong += vrecv.p[displs[static_cast<size_t>(m)] + i] != pat(m, i);
      EXPECT_EQ(wrong, 0u);
      shmem_barrier_all();
    }
  }
}

// Symmetric and private calls alternate on one communicator (collect makes both): the selection cache
// must not hand a private call the in-place algorithm chosen for a symmetric one of the same size.
TEST(Symmetric, PrivateCallAfterSymmetricOneOfTheSameSizeIsStaged) {
  Communicator& c = world();
  const size_t count = 37003;
  Sym s(count * 4), d(count * 4);
  std::vector<float> ps(count, 1.0f), pd(count, 0.0f);
  for (size_t i = 0; i < count; ++i) reinterpret_cast<float*>(s.p)[i] = 1.0f;
  Args x;
  x.send = s.p;
  x.recv = d.p;
  x.count = count;
  x.dtype = DType::kFloat32;
  run_sym(Kind::kAllreduce, x, nullptr);
  if (std::string(c.last_algo->name) != "symmetric") {
    shmem_barrier_all();
    GTEST_SKIP() << "the cost model chose " << c.last_algo->name << " for the symmetric call";
  }
  x.send = ps.data();
  x.recv = pd.data();
  x.symmetric = false;
  run(c, Kind::kAllreduce, x);
  EXPECT_NE(std::string(c.last_algo->name), "symmetric");
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += pd[i] != static_cast<float>(c.size);
  EXPECT_EQ(wrong, 0u);
  shmem_barrier_all();
}

}  // namespace
}  // namespace coll_test
