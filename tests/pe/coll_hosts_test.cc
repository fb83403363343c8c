// Collectives on a communicator whose members span hosts (coll/hier.h): every kind against a reference,
// over counts, types, operators, roots, in place and not, v variants with uneven and zero counts, splits,
// and the deterministic mode's rank-order bits. Run across hosts (pe/as_hosts.sh: 2x1, 3x1, 2x2, 2+1 PEs)
// by coll_hosts.cmake; on one host the same checks run through the engine's own algorithms.
#include <shmem.h>

#include <chrono>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "coll/p2p.h"
#include "coll/reduce/reduce.h"
#include "coll/select/select.h"
#include "coll_common.h"
#include "pe_main.h"
#include "pgas/runtime.h"
#include "transport/transport.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

const size_t kCounts[] = {0, 1, 7, 1000, 70001};

TEST(Hosts, CommunicatorSpansTheHosts) {
  const bool spans = tessera::pgas::team_world()->spans_hosts;
  EXPECT_EQ(world().hier != nullptr, spans);
  EXPECT_EQ(world().size, shmem_n_pes());
}

TEST(Hosts, ReductionsEveryTypeOpAndRoot) {
  const int n = world().size;
  for (int t = 0; t < kNumDTypes; ++t)
    for (int op = 0; op < kNumOps; ++op) {
      const DType dt = static_cast<DType>(t);
      if (!op_applies(dt, static_cast<Op>(op))) continue;
      for (bool ip : {false, true}) {
        check_reduction(Kind::kAllreduce, nullptr, 77, ip, dt, static_cast<Op>(op));
        check_reduction(Kind::kReduceScatter, nullptr, 13, ip, dt, static_cast<Op>(op));
      }
      for (int root = 0; root < n; ++root) check_reduction(Kind::kReduce, nullptr, 33, false, dt, static_cast<Op>(op), root);
    }
}

TEST(Hosts, AllreduceCountsRailsAndLeaders) {
  for (size_t count : kCounts)
    for (bool ip : {false, true}) {
      check_reduction(Kind::kAllreduce, nullptr, count, ip, DType::kFloat32, Op::kSum);
      check_reduction(Kind::kAllreduce, nullptr, count, ip, DType::kInt64, Op::kMax);
      check_reduction(Kind::kAllreduce, nullptr, count, ip, DType::kBFloat16, Op::kAvg);
    }  // Blocks of several MiB between hosts: the ring goes in pieces (hier.cc, kPieceBytes).
  for (bool ip : {false, true}) {
    check_reduction(Kind::kAllreduce, nullptr, 1200001, ip, DType::kInt64, Op::kSum);
    check_reduction(Kind::kAllreduce, nullptr, 1200001, ip, DType::kFloat32, Op::kMin);
  }
}

// Every allreduce row across hosts that applies to this layout, forced, at counts that do not divide among
// the hosts or their members (and one above a ring piece), in place and not, with the operators whose
// handling differs (a sum, an order, avg's division); then reduce and reduce-scatter over each of them
// (they compose this communicator's allreduce: TESSERA_ALGO is the only way to pick it, so here they run
// on the model's choice). On one host there are no such rows and nothing runs.
TEST(Hosts, EveryAllreduceRowAcrossHosts) {
  Communicator& c = world();
  int rows = 0;
  for (const Algorithm* a : algos_of(Kind::kAllreduce)) {
    if (!a->compose) break;  // one host: the engine's rows
    for (size_t count : {size_t{1}, size_t{5}, size_t{1001}, size_t{300007}}) {
      if (!fits(*a, make_shape(c, Kind::kAllreduce, count * 4))) continue;
      ++rows;
      SCOPED_TRACE(testing::Message() << a->name << ", " << count << " elements");
      for (bool ip : {false, true}) {
        check_reduction(Kind::kAllreduce, a, count, ip, DType::kFloat32, Op::kSum);
        check_reduction(Kind::kAllreduce, a, count, ip, DType::kInt32, Op::kMin);
        check_reduction(Kind::kAllreduce, a, count, ip, DType::kFloat64, Op::kAvg);
      }
    }
  }
  EXPECT_EQ(rows > 0, c.hier != nullptr) << "rows across hosts run exactly where the members span hosts";
  for (size_t count : {size_t{3}, size_t{4099}}) {
    check_reduction(Kind::kReduce, nullptr, count, false, DType::kInt64, Op::kSum, c.size - 1);
    check_reduction(Kind::kReduceScatter, nullptr, count, false, DType::kInt64, Op::kMax);
  }
}

// Element i of rank r's contribution.
uint32_t word(int r, size_t i) { return static_cast<uint32_t>(r) * 1000003u + static_cast<uint32_t>(i) * 7u + 1u; }

TEST(Hosts, AllgatherAndVariants) {
  Communicator& c = world();
  const int n = c.size, me = c.rank;
  for (size_t count : kCounts)
    for (bool ip : {false, true}) {
      std::vector<uint32_t> send(count), recv(count * n + 1, 0xdeadbeef);
      for (size_t i = 0; i < count; ++i) send[i] = word(me, i);
      if (ip) std::copy(send.begin(), send.end(), recv.begin() + static_cast<long>(me * count));
      run(c, Kind::kAllgather, Args{.send = ip ? recv.data() + me * count : send.data(), .recv = recv.data(),
                                     .count = count, .dtype = DType::kUint32});
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[r * count + i], word(r, i)) << "rank " << r << " i " << i;
      EXPECT_EQ(recv[count * n], 0xdeadbeef) << "wrote past the end";
    }
  // allgatherv: rank r contributes (r * 37) % 5 * 101 elements (zeros included), placed with gaps.
  std::vector<size_t> counts(n), displs(n);
  size_t at = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = static_cast<size_t>((r * 37) % 5) * 101;
    displs[r] = at + 3;
    at = displs[r] + counts[r];
  }
  std::vector<uint32_t> send(counts[me]), recv(at, 7);
  for (size_t i = 0; i < counts[me]; ++i) send[i] = word(me, i);
  run(c, Kind::kAllgatherv, Args{.send = send.data(), .recv = recv.data(), .count = counts[me], .dtype = DType::kUint32,
                                  .rcounts = counts.data(), .rdispls = displs.data()});
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < counts[r]; ++i) ASSERT_EQ(recv[displs[r] + i], word(r, i));
    for (size_t g = displs[r] - 3; g < displs[r]; ++g) ASSERT_EQ(recv[g], 7u) << "gap before rank " << r;
  }
}

TEST(Hosts, BroadcastEveryRoot) {
  Communicator& c = world();
  for (int root = 0; root < c.size; ++root)
    for (size_t count : kCounts) {
      std::vector<uint32_t> buf(count, 0), src(count);
      for (size_t i = 0; i < count; ++i) src[i] = word(root, i);
      run(c, Kind::kBroadcast, Args{.send = src.data(), .recv = buf.data(), .count = count, .dtype = DType::kUint32,
                                     .root = root});
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[i], word(root, i)) << "root " << root << " count " << count;
    }
}

TEST(Hosts, GatherScatterEveryRootAndVariants) {
  Communicator& c = world();
  const int n = c.size, me = c.rank;
  for (int root = 0; root < n; ++root)
    for (size_t count : {size_t{1}, size_t{1000}}) {
      std::vector<uint32_t> send(count), all(count * n, 0);
      for (size_t i = 0; i < count; ++i) send[i] = word(me, i);
      run(c, Kind::kGather, Args{.send = send.data(), .recv = all.data(), .count = count, .dtype = DType::kUint32,
                                  .root = root});
      if (me == root) {
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(all[r * count + i], word(r, i));
      }
      // Scatter back what the root gathered.
      std::vector<uint32_t> mine(count, 0);
      run(c, Kind::kScatter, Args{.send = all.data(), .recv = mine.data(), .count = count, .dtype = DType::kUint32,
                                   .root = root});
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(mine[i], word(me, i)) << "scatter from root " << root;
    }
  // v variants: rank r has r + 2 elements, the root's layout reversed with gaps.
  std::vector<size_t> counts(n), displs(n);
  size_t at = 0;
  for (int r = n - 1; r >= 0; --r) {
    counts[r] = static_cast<size_t>(r) + 2;
    displs[r] = at + 1;
    at = displs[r] + counts[r];
  }
  for (int root = 0; root < n; ++root) {
    std::vector<uint32_t> send(counts[me]), all(at, 0);
    for (size_t i = 0; i < counts[me]; ++i) send[i] = word(me, i);
    run(c, Kind::kGatherv, Args{.send = send.data(), .recv = all.data(), .count = counts[me], .dtype = DType::kUint32,
                                 .root = root, .rcounts = counts.data(), .rdispls = displs.data()});
    if (me == root) {
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < counts[r]; ++i) ASSERT_EQ(all[displs[r] + i], word(r, i));
    }
    std::vector<uint32_t> mine(counts[me], 0);
    run(c, Kind::kScatterv, Args{.send = all.data(), .recv = mine.data(), .count = counts[me], .dtype = DType::kUint32,
                                  .root = root, .scounts = counts.data(), .sdispls = displs.data()});
    for (size_t i = 0; i < counts[me]; ++i) ASSERT_EQ(mine[i], word(me, i)) << "scatterv from root " << root;
  }
}

// Alltoall with the model's row and with every row across hosts forced (on one host: the model's only).
TEST(Hosts, AlltoallAndVariants) {
  Communicator& c = world();
  const int n = c.size, me = c.rank;
  // Block for rank `to` from rank `from`, element i.
  auto cell = [](int from, int to, size_t i) { return word(from, i) ^ (static_cast<uint32_t>(to) << 24); };
  std::vector<const Algorithm*> rows{nullptr};
  for (const Algorithm* a : algos_of(Kind::kAlltoall))
    if (a->compose) rows.push_back(a);
  for (const Algorithm* a : rows)
    for (size_t count : kCounts)
      for (bool ip : {false, true}) {
        SCOPED_TRACE(testing::Message() << (a ? a->name : "model's row") << ", " << count << " elements"
                                        << (ip ? ", in place" : ""));
        std::vector<uint32_t> send(count * n), recv(count * n, 0);
        for (int to = 0; to < n; ++to)
          for (size_t i = 0; i < count; ++i) send[to * count + i] = cell(me, to, i);
        if (ip) recv = send;
        run(c, Kind::kAlltoall, Args{.send = ip ? recv.data() : send.data(), .recv = recv.data(), .count = count,
                                      .dtype = DType::kUint32}, a);
        for (int from = 0; from < n; ++from)
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[from * count + i], cell(from, me, i)) << "from " << from;
      }
  if (c.net) {
    EXPECT_GE(rows.size(), 3u) << "the exchange and leaders rows";
  }
  // alltoallv: rank f sends (f + t) % 3 * 50 elements to rank t.
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  size_t s_at = 0, r_at = 0;
  for (int p = 0; p < n; ++p) {
    sc[p] = static_cast<size_t>((me + p) % 3) * 50, sd[p] = s_at, s_at += sc[p] + 1;
    rc[p] = static_cast<size_t>((p + me) % 3) * 50, rd[p] = r_at, r_at += rc[p] + 2;
  }
  std::vector<uint32_t> send(s_at), recv(r_at, 0);
  for (int to = 0; to < n; ++to)
    for (size_t i = 0; i < sc[to]; ++i) send[sd[to] + i] = cell(me, to, i);
  run(c, Kind::kAlltoallv, Args{.send = send.data(), .recv = recv.data(), .dtype = DType::kUint32, .scounts = sc.data(),
                                 .sdispls = sd.data(), .rcounts = rc.data(), .rdispls = rd.data()});
  for (int from = 0; from < n; ++from)
    for (size_t i = 0; i < rc[from]; ++i) ASSERT_EQ(recv[rd[from] + i], cell(from, me, i)) << "from " << from;
}

TEST(Hosts, ScansInclusiveAndExclusive) {
  Communicator& c = world();
  const int me = c.rank;
  for (size_t count : {size_t{1}, size_t{513}})
    for (Kind k : {Kind::kInscan, Kind::kExscan}) {
      std::vector<int64_t> send(count), recv(count, -1);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<int64_t>(word(me, i) % 1000);
      run(c, k, Args{.send = send.data(), .recv = recv.data(), .count = count, .dtype = DType::kInt64, .op = Op::kSum});
      const int upto = k == Kind::kInscan ? me + 1 : me;
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int r = 0; r < upto; ++r) want += static_cast<int64_t>(word(r, i) % 1000);
        ASSERT_EQ(recv[i], want) << kind_name(k) << " i " << i;
      }
    }
}

// After a barrier, every rank's atomic increments of this round are visible on PE 0.
TEST(Hosts, BarrierOrdersAtomics) {
  Communicator& c = world();
  static long counter;  // symmetric (a global)
  for (long round = 1; round <= 50; ++round) {
    shmem_long_atomic_inc(&counter, 0);
    shmem_quiet();
    run(c, Kind::kBarrier, Args{});
    if (c.rank == 0) {
      ASSERT_EQ(shmem_long_atomic_fetch(&counter, 0), round * c.size) << "round " << round;
    }
    run(c, Kind::kBarrier, Args{});
  }
}

TEST(Hosts, SplitByParityThenAllreduce) {
  Communicator& c = world();
  auto r = comm_split(&c, c.rank % 2, -c.rank);  // keys reversed: ranks in decreasing world order
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  Communicator* sub = r.value();
  int64_t mine = c.rank + 1, sum = 0;
  run(*sub, Kind::kAllreduce, Args{.send = &mine, .recv = &sum, .count = 1, .dtype = DType::kInt64, .op = Op::kSum});
  int64_t want = 0;
  for (int q = c.rank % 2; q < c.size; q += 2) want += q + 1;
  EXPECT_EQ(sum, want);
  comm_destroy(sub);
}

// The job's PEs on hosts other than this PE's.
std::vector<int> pes_on_other_hosts() {
  const tessera::pgas::Runtime& rt = tessera::pgas::rt();
  const int me = shmem_my_pe();
  std::vector<int> others;
  for (int q = 0; q < shmem_n_pes(); ++q)
    if (rt.host_of[static_cast<size_t>(q)] != rt.host_of[static_cast<size_t>(me)]) others.push_back(q);
  return others;
}

// The transport's messages to every PE on another host from two threads at once, each with its own tag
// (the comm streams' case): small and large messages, several in flight per connection, every byte
// checked. One thread may complete the other's messages while it waits (TESSERA_NET_MESSAGES=tcp: one
// waiter polls for all).
TEST(Hosts, TwoThreadsMessageOtherHostsAtOnce) {
  const tessera::pgas::Runtime& rt = tessera::pgas::rt();
  const int me = shmem_my_pe();
  const std::vector<int> others = pes_on_other_hosts();
  if (others.empty()) GTEST_SKIP() << "every PE is on this host";
  auto value = [](int from, int to, int thread, int round, size_t i) {
    return static_cast<uint32_t>(from * 7919 + to * 104729 + thread * 31 + round * 1299709) + static_cast<uint32_t>(i);
  };
  std::vector<std::string> failures(2);
  auto body = [&](int t) {
    // As the collectives' tags do, each names its sender: a UCX receive matches the tag from any peer.
    auto tag = [t](int from) { return uint64_t{3} << 62 | static_cast<uint64_t>(t) << 32 | static_cast<uint64_t>(from); };
    for (int round = 0; round < 40; ++round) {
      const size_t words = round % 3 == 0 ? 65536 : 1 + static_cast<size_t>(round);  // 256 KiB or a few
      std::vector<std::vector<uint32_t>> out(others.size(), std::vector<uint32_t>(words)),
          in(others.size(), std::vector<uint32_t>(words));
      std::vector<void*> recvs, sends;
      for (size_t k = 0; k < others.size(); ++k) {
        for (size_t i = 0; i < words; ++i) out[k][i] = value(me, others[k], t, round, i);
        const tessera::transport::Transport* tp = rt.messages[static_cast<size_t>(others[k])];
        recvs.push_back(tp->recv(others[k], tag(others[k]), in[k].data(), words * 4));
        sends.push_back(tp->send(others[k], tag(me), out[k].data(), words * 4));
      }
      for (size_t k = 0; k < others.size(); ++k) {
        const tessera::transport::Transport* tp = rt.messages[static_cast<size_t>(others[k])];
        if (recvs[k]) tp->wait(recvs[k], "test receive", others[k], words * 4);
        if (sends[k]) tp->wait(sends[k], "test send", others[k], words * 4);
        for (size_t i = 0; i < words; ++i)
          if (in[k][i] != value(others[k], me, t, round, i) && failures[static_cast<size_t>(t)].empty())
            failures[static_cast<size_t>(t)] = fmt::format("thread {} round {}: word {} from PE {} is {}, expected {}",
                                                           t, round, i, others[k], in[k][i],
                                                           value(others[k], me, t, round, i));
      }
    }
  };
  std::thread second(body, 1);
  body(0);
  second.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
  shmem_barrier_all();
}

// Large messages whose receives come late or out of order (TESSERA_NET_MESSAGES=tcp holds an unmatched
// large message in its socket): every PE sends two 1 MiB messages to each PE on another host, then receives
// the second before the first (the held first must be read into a buffer of its own for the second to
// pass), then two more received in order but posted late (the held message goes straight into place).
// Every byte checked.
TEST(Hosts, LargeMessagesReceivedLateOrOutOfOrder) {
  const tessera::pgas::Runtime& rt = tessera::pgas::rt();
  const int me = shmem_my_pe();
  const std::vector<int> others = pes_on_other_hosts();
  if (others.empty()) GTEST_SKIP() << "every PE is on this host";
  constexpr size_t kWords = 262144;  // 1 MiB
  auto value = [](int from, int to, int msg, size_t i) {
    return static_cast<uint32_t>(from * 7919 + to * 104729 + msg * 1299709) + static_cast<uint32_t>(i);
  };
  auto tag = [](int msg, int from) { return uint64_t{3} << 62 | uint64_t{7} << 40 | uint64_t(msg) << 32 | uint64_t(from); };
  const size_t k_n = others.size();
  std::vector<std::vector<uint32_t>> out(k_n * 4, std::vector<uint32_t>(kWords)), in(k_n * 4, std::vector<uint32_t>(kWords));
  std::vector<void*> sends;
  for (size_t k = 0; k < k_n; ++k) {
    const tessera::transport::Transport* tp = rt.messages[static_cast<size_t>(others[k])];
    for (int m = 0; m < 4; ++m) {
      auto& o = out[k * 4 + static_cast<size_t>(m)];
      for (size_t i = 0; i < kWords; ++i) o[i] = value(me, others[k], m, i);
      sends.push_back(tp->send(others[k], tag(m, me), o.data(), kWords * 4));
    }
  }
  for (size_t k = 0; k < k_n; ++k) {
    const int q = others[k];
    const tessera::transport::Transport* tp = rt.messages[static_cast<size_t>(q)];
    auto receive = [&](int m) {
      void* r = tp->recv(q, tag(m, q), in[k * 4 + static_cast<size_t>(m)].data(), kWords * 4);
      if (r) tp->wait(r, "test receive", q, kWords * 4);
    };
    receive(1);  // message 0 arrives first and nobody has asked for it
    receive(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // messages 2 and 3 wait in the socket
    receive(2);
    receive(3);
  }
  for (size_t k = 0; k < k_n; ++k) {
    const tessera::transport::Transport* tp = rt.messages[static_cast<size_t>(others[k])];
    for (int m = 0; m < 4; ++m)
      if (void* r = sends[k * 4 + static_cast<size_t>(m)]) tp->wait(r, "test send", others[k], kWords * 4);
  }
  for (size_t k = 0; k < k_n; ++k)
    for (int m = 0; m < 4; ++m)
      for (size_t i = 0; i < kWords; ++i)
        ASSERT_EQ(in[k * 4 + static_cast<size_t>(m)][i], value(others[k], me, m, i))
            << "message " << m << " from PE " << others[k] << " word " << i;
  shmem_barrier_all();
}

// Send/recv with every other rank (peers on this host and on others), several messages per pair in order,
// in a group so that both sides may send first.
TEST(Hosts, SendRecvEveryPairInOrder) {
  Communicator& c = world();
  const int n = c.size, me = c.rank;
  constexpr int kMsgs = 3;
  for (size_t count : {size_t{1}, size_t{5000}, size_t{300000}}) {
    std::vector<std::vector<uint32_t>> out(n * kMsgs), in(n * kMsgs);
    group_start();
    for (int p = 0; p < n; ++p)
      for (int k = 0; k < kMsgs; ++k) {
        auto& o = out[p * kMsgs + k];
        o.resize(count);
        for (size_t i = 0; i < count; ++i) o[i] = word(me, i) + static_cast<uint32_t>(k * 31 + p);
        in[p * kMsgs + k].assign(count, 0);
        ASSERT_TRUE(p2p_send(c, o.data(), count * 4, p).is_ok());
        ASSERT_TRUE(p2p_recv(c, in[p * kMsgs + k].data(), count * 4, p).is_ok());
      }
    ASSERT_TRUE(group_end().is_ok());
    for (int p = 0; p < n; ++p)
      for (int k = 0; k < kMsgs; ++k)
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(in[p * kMsgs + k][i], word(p, i) + static_cast<uint32_t>(k * 31 + me)) << "from " << p << " msg " << k;
  }
  // Outside a group, a ring: even ranks send first, odd ranks receive first.
  if (n > 1) {
    uint64_t v = static_cast<uint64_t>(me) * 77, got = 0;
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    if (me % 2 == 0) {
      ASSERT_TRUE(p2p_send(c, &v, 8, right).is_ok());
      ASSERT_TRUE(p2p_recv(c, &got, 8, left).is_ok());
    } else {
      ASSERT_TRUE(p2p_recv(c, &got, 8, left).is_ok());
      ASSERT_TRUE(p2p_send(c, &v, 8, right).is_ok());
    }
    EXPECT_EQ(got, static_cast<uint64_t>(left) * 77);
  }
}

// TESSERA_DETERMINISTIC=1: floating-point results are the rank-order fold of the inputs, bit for bit,
// whichever host holds which rank.
TEST(Hosts, DeterministicModeFoldsInRankOrder) {
  if (!deterministic_mode()) GTEST_SKIP() << "TESSERA_DETERMINISTIC is not set (coll_hosts.cmake runs it with)";
  Communicator& c = world();
  const int n = c.size;
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16})
    for (size_t count : {size_t{3}, size_t{20001}}) {
      std::vector<Buf> in;
      for (int r = 0; r < n; ++r) {
        in.emplace_back(t, count);
        std::mt19937_64 g(99 + r);
        std::uniform_real_distribution<double> d(-1.0, 1.0);
        for (size_t i = 0; i < count; ++i) in.back().set(i, d(g) * (1 + static_cast<double>(i % 13)));
      }
      Buf want(t, count), got(t, count);
      std::vector<const void*> srcs;
      for (auto& b : in) srcs.push_back(b.data());
      if (n == 1) want.b = in[0].b;
      else reduce(want.data(), srcs.data(), n, count, t, Op::kSum, 0);
      run(c, Kind::kAllreduce, Args{.send = in[c.rank].data(), .recv = got.data(), .count = count, .dtype = t});
      EXPECT_EQ(count_wrong(got.b.data(), want.b.data(), count, dtype_size(t)), 0u) << dtype_name(t) << " " << count;
    }
}

}  // namespace
}  // namespace coll_test
