// The LL protocol (small calls without steps, coll/ll.cc): every LL algorithm at and around its size
// limit, every root, in place and out of place, interleaved with stepped calls and LL calls of count 0
// (which leave the reuse of LL buffers to be proved by waiting). Runs at 1, 2, 3, 4, 7 and 8 PEs
// (coll_algos.cmake).
#include <sched.h>
#include <shmem.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/cpu.h"
#include "coll/engine.h"
#include "coll_common.h"
#include "pe_main.h"
#include "placement_check.h"
#include "sync/wait.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

// The LL allreduce at its size limit and just below, every type and op, in place and out of place.
TEST(Allreduce, LLUpToItsLimitEveryTypeAndOp) {
  const Algorithm* ll = find_algorithm(Kind::kAllreduce, "ll");
  ASSERT_NE(ll, nullptr);
  for (int t = 0; t < kNumDTypes; ++t)
    for (int op = 0; op < kNumOps; ++op) {
      if (!op_applies(static_cast<DType>(t), static_cast<Op>(op))) continue;
      const size_t limit = kLLBytes / dtype_size(static_cast<DType>(t));
      for (size_t count : {size_t{1}, size_t{7}, limit - 1, limit})
        check_reduction(Kind::kAllreduce, ll, count, (count + op) % 2 == 0, static_cast<DType>(t), static_cast<Op>(op));
    }
  // One element more than the LL buffer holds is refused with the size.
  std::vector<char> big(kLLBytes + 1);
  Args a;
  a.send = a.recv = big.data();
  a.count = big.size();
  a.dtype = DType::kUint8;
  tessera::Status st = dispatch(world(), Kind::kAllreduce, a, ll);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(std::to_string(kLLBytes + 1) + " bytes"), std::string::npos) << st.message();
}

// Every payload size from 1 to 72 bytes: each branch of the inline copy of small payloads (ll.cc), and
// both sides of the 56 bytes that share the flag's cache line. In place and out of place alternate.
TEST(Allreduce, LLEveryPayloadSizeUpTo72Bytes) {
  const Algorithm* ll = find_algorithm(Kind::kAllreduce, "ll");
  ASSERT_NE(ll, nullptr);
  for (size_t count = 1; count <= 72; ++count)
    check_reduction(Kind::kAllreduce, ll, count, count % 2 == 0, DType::kUint8, Op::kSum);
  for (size_t count = 1; count <= 18; ++count)
    check_reduction(Kind::kAllreduce, ll, count, count % 2 == 1, DType::kFloat32, Op::kMax);
}

// The LL waiting order (comm.h: wait_order, spin_for): every other member once; when the job has more PEs
// than CPUs and they are bound one CPU each, the members bound to my CPU come first and only the others are
// waited for by spinning. Checked against each member's CPU as the member itself sees it (placement_check.h).
TEST(Comm, WaitOrderPutsMembersOfMyCpuFirst) {
  Communicator& c = world();
  std::vector<int64_t> cpus(static_cast<size_t>(c.size));
  for (int m = 0; m < c.size; ++m) cpus[static_cast<size_t>(m)] = tessera::sync::pe_cpu(c.world[m]);
  EXPECT_EQ(cpus[static_cast<size_t>(c.rank)], checked_start_cpu());
  ASSERT_EQ(c.wait_order.size(), static_cast<size_t>(c.size - 1));
  std::vector<int> seen(static_cast<size_t>(c.size), 0);
  bool apart_seen = false;
  for (int m : c.wait_order) {
    ASSERT_TRUE(m >= 0 && m < c.size && m != c.rank) << m;
    ++seen[static_cast<size_t>(m)];
    const int64_t mine = cpus[static_cast<size_t>(c.rank)], theirs = cpus[static_cast<size_t>(m)];
    const bool apart = c.oversubscribed && mine >= 0 && theirs >= 0 && mine != theirs;
    EXPECT_EQ(c.spin_for[static_cast<size_t>(m)], apart ? 1 : 0) << "member " << m;
    if (apart) {
      apart_seen = true;
    } else {
      EXPECT_FALSE(apart_seen) << "member " << m << " shares my CPU but comes after one that does not";
    }
  }
  for (int m = 0; m < c.size; ++m) EXPECT_EQ(seen[static_cast<size_t>(m)], m == c.rank ? 0 : 1) << m;
  // tessera-run binds PE i to the i-th CPU of the job (modulo their count): with two CPUs or more, an
  // oversubscribed member has members on another CPU.
  if (c.oversubscribed && cpus[static_cast<size_t>(c.rank)] >= 0 && tessera::usable_cpus() >= 2) {
    EXPECT_TRUE(apart_seen);
  }
}

// LL calls between stepped calls and LL calls of count 0, which do not prove that every member has
// left the previous use of an LL buffer (ll.cc); every result is checked.
TEST(Allreduce, LLInterleavedWithSteppedCalls) {
  Communicator& c = world();
  const int n = c.size;
  const Algorithm* ll = find_algorithm(Kind::kAllreduce, "ll");
  const Algorithm* oneshot = find_algorithm(Kind::kAllreduce, "oneshot");
  for (int round = 0; round < 30; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    check_reduction(Kind::kAllreduce, ll, 3 + round, round % 2 == 0, DType::kInt32, Op::kSum);
    switch (round % 3) {
      case 0: check_reduction(Kind::kAllreduce, oneshot, 5, false, DType::kFloat32, Op::kMax); break;
      case 1: check_reduction(Kind::kAllreduce, ll, 0, false, DType::kFloat32, Op::kSum); break;
      case 2: {  // a stepped broadcast: its root waits for nobody but its right neighbour
        std::vector<int32_t> b(9, c.rank == round % n ? round : -1);
        Args x;
        x.send = x.recv = b.data();
        x.count = b.size();
        x.dtype = DType::kInt32;
        x.root = round % n;
        run(c, Kind::kBroadcast, x, find_algorithm(Kind::kBroadcast, "direct"));
        EXPECT_EQ(b, std::vector<int32_t>(9, round));
        break;
      }
    }
  }
}

// The LL allgather, broadcast, reduce, reduce_scatter, alltoall, gather and scatter up to the LL limit,
// every root in turn,
// between stepped calls and LL calls of count 0 (which leave the reuse of LL buffers to be proved by
// waiting: ll.cc).
TEST(LL, EveryCollectiveEveryRootUpToTheLimitBetweenSteppedCalls) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  const Algorithm* ag = find_algorithm(Kind::kAllgather, "ll");
  const Algorithm* bc = find_algorithm(Kind::kBroadcast, "ll");
  const Algorithm* rd = find_algorithm(Kind::kReduce, "ll");
  const Algorithm* aa = find_algorithm(Kind::kAlltoall, "ll");
  const Algorithm* ga = find_algorithm(Kind::kGather, "ll");
  const Algorithm* sc = find_algorithm(Kind::kScatter, "ll");
  const Algorithm* rs = find_algorithm(Kind::kReduceScatter, "ll");
  const Algorithm* stepped = find_algorithm(Kind::kAllgather, "direct");
  ASSERT_TRUE(ag && bc && rd && aa && ga && sc && rs && stepped);
  const size_t sizes[] = {1, 7, 56, 57, 200, kLLBytes};  // bytes: inline in the flag's line, or not
  for (int round = 0; round < 24; ++round) {
    const size_t bytes = sizes[round % 6];
    const int root = round % n;
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(bytes) + " bytes, root " +
                 std::to_string(root));
    // allgather of uint8, in place on odd rounds
    std::vector<uint8_t> in(bytes), out(bytes * n, 0xee);
    for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<uint8_t>(r * 31 + i * 7 + round);
    Args g;
    g.count = bytes;
    g.dtype = DType::kUint8;
    g.recv = out.data();
    if (round % 2) std::memcpy(out.data() + r * bytes, in.data(), bytes);
    g.send = round % 2 ? static_cast<const void*>(out.data() + r * bytes) : in.data();
    run(c, Kind::kAllgather, g, ag);
    size_t wrong = 0;
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < bytes; ++i) wrong += out[m * bytes + i] != static_cast<uint8_t>(m * 31 + i * 7 + round);
    EXPECT_EQ(wrong, 0u) << "allgather";
    // broadcast of uint8 from `root`, out of place on even rounds
    std::vector<uint8_t> b(bytes, r == root ? static_cast<uint8_t>(round + 1) : 0), o(bytes, 0);
    Args x;
    x.count = bytes;
    x.dtype = DType::kUint8;
    x.root = root;
    x.send = b.data();
    x.recv = round % 2 ? b.data() : o.data();
    run(c, Kind::kBroadcast, x, bc);
    EXPECT_EQ(std::vector<uint8_t>(static_cast<uint8_t*>(x.recv), static_cast<uint8_t*>(x.recv) + bytes),
              std::vector<uint8_t>(bytes, static_cast<uint8_t>(round + 1))) << "broadcast";
    // reduce (sum of int32) to `root`
    const size_t count = std::max<size_t>(bytes / 4, 1);
    std::vector<int32_t> v(count), sum(count, -1);
    for (size_t i = 0; i < count; ++i) v[i] = static_cast<int32_t>(r * 1000 + i);
    Args d;
    d.count = count;
    d.dtype = DType::kInt32;
    d.op = Op::kSum;
    d.root = root;
    d.send = v.data();
    d.recv = sum.data();
    run(c, Kind::kReduce, d, rd);
    if (r == root) {
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(sum[i], static_cast<int32_t>(1000 * n * (n - 1) / 2 + n * i)) << "reduce, element " << i;
    }
    // alltoall, gather and scatter of uint8: pieces of bytes / n (alltoall, scatter: all n pieces in one
    // LL buffer) and of bytes (gather), in place on odd rounds
    const size_t piece = std::max<size_t>(bytes / static_cast<size_t>(n), 1);
    auto byte = [&](int from, int to, size_t i) { return static_cast<uint8_t>(from * 31 + to * 5 + i * 7 + round); };
    {
      std::vector<uint8_t> snd(piece * n), rcv(piece * n, 0xee);
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < piece; ++i) snd[m * piece + i] = byte(r, m, i);
      Args t;
      t.count = piece;
      t.dtype = DType::kUint8;
      t.send = snd.data();
      t.recv = round % 2 ? snd.data() : rcv.data();
      run(c, Kind::kAlltoall, t, aa);
      const uint8_t* got = static_cast<const uint8_t*>(t.recv);
      size_t bad = 0;
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < piece; ++i) bad += got[m * piece + i] != byte(m, r, i);
      EXPECT_EQ(bad, 0u) << "alltoall";
    }
    {
      // reduce_scatter (sum of int32): blocks of up to bytes / n, in place on odd rounds
      const size_t block = std::max<size_t>(bytes / 4 / static_cast<size_t>(n), 1);
      std::vector<int32_t> in(block * n), out(block, -1);
      for (size_t i = 0; i < block * n; ++i) in[i] = static_cast<int32_t>(r * 1000 + i + round);
      Args t;
      t.count = block;
      t.dtype = DType::kInt32;
      t.op = Op::kSum;
      t.send = in.data();
      t.recv = round % 2 ? in.data() + r * block : out.data();
      run(c, Kind::kReduceScatter, t, rs);
      const int32_t* got = static_cast<const int32_t*>(t.recv);
      size_t bad = 0;
      for (size_t i = 0; i < block; ++i)
        bad += got[i] != static_cast<int32_t>(1000 * n * (n - 1) / 2 + n * (r * block + i + round));
      EXPECT_EQ(bad, 0u) << "reduce_scatter";
    }
    {
      std::vector<uint8_t> mine(bytes), all(bytes * n, 0xee);
      for (size_t i = 0; i < bytes; ++i) mine[i] = byte(r, root, i);
      if (round % 2 && r == root) std::memcpy(all.data() + r * bytes, mine.data(), bytes);
      Args t;
      t.count = bytes;
      t.dtype = DType::kUint8;
      t.root = root;
      t.send = round % 2 && r == root ? static_cast<const void*>(all.data() + r * bytes) : mine.data();
      t.recv = r == root ? all.data() : nullptr;
      run(c, Kind::kGather, t, ga);
      if (r == root) {
        size_t bad = 0;
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < bytes; ++i) bad += all[m * bytes + i] != byte(m, root, i);
        EXPECT_EQ(bad, 0u) << "gather";
      }
    }
    {
      std::vector<uint8_t> src(piece * n), got(piece, 0xee);
      if (r == root)
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < piece; ++i) src[m * piece + i] = byte(root, m, i);
      Args t;
      t.count = piece;
      t.dtype = DType::kUint8;
      t.root = root;
      t.send = r == root ? src.data() : nullptr;
      t.recv = round % 2 && r == root ? src.data() + r * piece : got.data();
      run(c, Kind::kScatter, t, sc);
      const uint8_t* p = static_cast<const uint8_t*>(t.recv);
      size_t bad = 0;
      for (size_t i = 0; i < piece; ++i) bad += p[i] != byte(root, r, i);
      EXPECT_EQ(bad, 0u) << "scatter";
    }
    // between rounds: a stepped call, or an LL call of count 0
    if (round % 3 == 0) {
      std::vector<float> a(3, 1.0f), all(3 * n);
      Args s;
      s.count = 3;
      s.dtype = DType::kFloat32;
      s.send = a.data();
      s.recv = all.data();
      run(c, Kind::kAllgather, s, stepped);
      EXPECT_EQ(all, std::vector<float>(3 * n, 1.0f));
    } else if (round % 3 == 1) {
      Args z;
      z.count = 0;
      z.dtype = DType::kUint8;
      z.root = root;
      run(c, Kind::kBroadcast, z, bc);
    }
  }
}

}  // namespace
}  // namespace coll_test
