// The engine's barrier (every algorithm orders rounds), send/recv in groups (large messages both ways, ring
// wrap-around, messages to oneself) and communicator split (colors, keys, no color), at 1, 2, 3, 4, 7 and 8
// PEs with the small staging of the other collective tests (coll_algos.cmake).
#include <shmem.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tessera/coll.hpp>

#include "coll_common.h"
#include "pe_main.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

TEST(Barrier, EveryAlgorithmOrdersRounds) {
  Communicator& c = world();
  const int n = c.size;
  int* counter = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  for (const Algorithm* a : algos_of(Kind::kBarrier)) {
    SCOPED_TRACE(a->name);
    for (int round = 1; round <= 20; ++round) {
      shmem_int_atomic_inc(counter, 0);
      run(c, Kind::kBarrier, Args{}, a);
      // everyone has incremented before anyone passed the barrier, and nobody increments again before
      // everyone has passed the second one
      EXPECT_EQ(shmem_int_atomic_fetch(counter, 0), round * n);
      run(c, Kind::kBarrier, Args{}, a);
    }
    run(c, Kind::kBarrier, Args{}, a);
    if (c.rank == 0) shmem_int_atomic_set(counter, 0, 0);
    run(c, Kind::kBarrier, Args{}, a);
  }
  shmem_free(counter);
}

TEST(SendRecv, GroupRingExchangeWrapsAndKeepsOrder) {
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  const int n = comm.size(), r = comm.rank();
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  // 100000 ints: more than a send/recv ring holds (256 KiB), so the single-copy path where the host allows it.
  // 12 ints fill a header's inline bytes, 13 do not.
  for (size_t count : {size_t{0}, size_t{3}, size_t{12}, size_t{13}, size_t{5000}, size_t{20000}, size_t{100000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::vector<int> a(count), b(count), ra(count, -1), rb(count, -1);
    for (size_t i = 0; i < count; ++i) {
      a[i] = static_cast<int>(r * 100000 + i);
      b[i] = -static_cast<int>(r * 100000 + i);
    }
    {
      tessera::coll::Group g;  // both sides send first: only a group completes this for large messages
      comm.send(a.data(), count, tessera::coll::DataType::kInt32, right);
      comm.send(b.data(), count, tessera::coll::DataType::kInt32, right);
      comm.recv(ra.data(), count, tessera::coll::DataType::kInt32, left);
      comm.recv(rb.data(), count, tessera::coll::DataType::kInt32, left);
    }
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(ra[i], static_cast<int>(left * 100000 + i));
      ASSERT_EQ(rb[i], -static_cast<int>(left * 100000 + i));
    }
  }
  // Small messages carried in their headers, enough of them to wrap the ring several times, mixed with
  // messages just too large for a header.
  for (int i = 0; i < 20000; ++i) {
    const size_t count = i % 7 == 0 ? 13 : 1 + i % 12;
    int out[13], in[13];
    for (size_t k = 0; k < count; ++k) out[k] = r * 1000000 + i * 13 + static_cast<int>(k);
    {
      tessera::coll::Group g;
      comm.send(out, count, tessera::coll::DataType::kInt32, right);
      comm.recv(in, count, tessera::coll::DataType::kInt32, left);
    }
    for (size_t k = 0; k < count; ++k) ASSERT_EQ(in[k], left * 1000000 + i * 13 + static_cast<int>(k)) << i;
  }
  // To myself, inside a group, small and larger than the ring.
  for (size_t count : {size_t{3000}, size_t{40000}}) {
    std::vector<double> x(count, 1.5), y(count, 0);
    x[count - 1] = -2.5;
    {
      tessera::coll::Group g;
      comm.send(x.data(), x.size(), tessera::coll::DataType::kFloat64, r);
      comm.recv(y.data(), y.size(), tessera::coll::DataType::kFloat64, r);
    }
    EXPECT_EQ(x, y);
  }
}

TEST(Split, ColorsAndKeys) {
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  const int n = comm.size(), r = comm.rank();
  // Two colors; within a color, reverse order by key.
  tessera::coll::Comm sub = comm.split(r % 2, -r);
  ASSERT_TRUE(sub);
  int members = (n - r % 2 + 1) / 2;
  EXPECT_EQ(sub.size(), members);
  int expect_rank = 0;
  for (int q = r + 2; q < n; q += 2) ++expect_rank;  // higher ranks of my color come first
  EXPECT_EQ(sub.rank(), expect_rank);
  std::vector<int64_t> v{r, 1};
  sub.allreduce(v, tessera::coll::RedOp::kSum);
  int64_t sum = 0;
  for (int q = r % 2; q < n; q += 2) sum += q;
  EXPECT_EQ(v[0], sum);
  EXPECT_EQ(v[1], members);
  // No color: no communicator.
  tessera::coll::Comm none = comm.split(r == 0 ? TESSERA_SPLIT_NOCOLOR : 1, 0);
  EXPECT_EQ(static_cast<bool>(none), r != 0);
  if (none) {
    EXPECT_EQ(none.size(), n - 1);
  }
}

}  // namespace
}  // namespace coll_test
