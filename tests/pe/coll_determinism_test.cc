// TESSERA_DETERMINISTIC=1 and TESSERA_CHECK=1 (coll_algos.cmake): with random (inexact) floating-point
// inputs, allreduce gives the same bits whichever algorithm is asked for, on every rank (the thorough check
// compares result hashes across ranks and would end the job), and equal to reducing the n inputs in rank
// order in one pass; reduce and reduce_scatter agree with it bit for bit.
#include <cstring>
#include <random>

#include "coll/reduce/reduce.h"
#include "coll/select/select.h"
#include "coll_common.h"
#include "pe_main.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

void random_input(int rank, DType t, size_t count, Buf* b) {
  std::mt19937_64 g(1234 + rank);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (size_t i = 0; i < count; ++i) b->set(i, d(g) * (1 + static_cast<double>(i % 17)));
}

TEST(Determinism, ModeIsOn) { EXPECT_TRUE(deterministic_mode()); }

// The thorough check (TESSERA_CHECK=1) after a call that moves nothing: every replicated collective with
// count 0, on each algorithm that supports it and on the model's choice, returns. An LL call with count 0
// used to leave itself unrecorded, and the check's exchange then waited for every peer until the deadline
// (found by tessera-soak). A call with count 0 writes nothing, and the calls after it still agree: a
// one-element allreduce after each gives every rank the sum of all ranks' inputs.
TEST(ThoroughCheck, CountZeroEveryAlgorithm) {
  ASSERT_GE(check_level(), 1);
  Communicator& c = world();
  char buf[16];
  std::memset(buf, 0x5a, sizeof buf);
  size_t zeros[64] = {};
  for (Kind k : {Kind::kAllreduce, Kind::kAllgather, Kind::kBroadcast, Kind::kAllgatherv}) {
    std::vector<const Algorithm*> algos = algos_of(k);
    algos.push_back(nullptr);
    for (const Algorithm* a : algos) {
      if (a && !a->supports(make_shape(c, k, 0))) continue;
      SCOPED_TRACE(std::string(kind_name(k)) + " " + (a ? a->name : "auto"));
      Args args;
      args.send = buf;
      args.recv = buf + 8;
      args.count = 0;
      args.dtype = DType::kFloat64;
      if (k == Kind::kAllgatherv) args.rcounts = zeros, args.rdispls = zeros;
      run(c, k, args, a);
      for (size_t i = 0; i < sizeof buf; ++i) ASSERT_EQ(buf[i], 0x5a) << "byte " << i << " written by a call of count 0";
      double in = c.rank + 1, out = 0;
      Args one;
      one.send = &in;
      one.recv = &out;
      one.count = 1;
      one.dtype = DType::kFloat64;
      one.op = Op::kSum;
      run(c, Kind::kAllreduce, one);
      ASSERT_EQ(out, c.size * (c.size + 1) / 2.0) << "the allreduce after the call of count 0";
    }
  }
}

TEST(Determinism, EveryAlgorithmGivesRankOrderBits) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64})
    for (Op op : {Op::kSum, Op::kAvg, Op::kProd})
      for (size_t count : {size_t{1}, size_t{999}, size_t{70001}}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + op_name(op) + " count " + std::to_string(count));
        const size_t es = dtype_size(t);
        // The reference: all n inputs reduced in rank order in one pass.
        std::vector<Buf> inputs;
        std::vector<const void*> srcs;
        for (int m = 0; m < n; ++m) {
          inputs.emplace_back(t, count);
          random_input(m, t, count, &inputs.back());
        }
        for (auto& b : inputs) srcs.push_back(b.data());
        Buf expect(t, count);
        reduce(expect.data(), srcs.data(), n, count, t, op, op == Op::kAvg ? n : 0);
        for (const Algorithm* a : algos_of(Kind::kAllreduce)) {
          SCOPED_TRACE(a->name);
          Buf out(t, count);
          Args x;
          x.send = inputs[r].data();
          x.recv = out.data();
          x.count = count;
          x.dtype = t;
          x.op = op;
          run(c, Kind::kAllreduce, x, a->supports(make_shape(c, Kind::kAllreduce, count * es)) ? a : nullptr);
          EXPECT_EQ(count_wrong(out.at(0), expect.at(0), count, es), 0u);
        }
        // reduce at the last rank and reduce_scatter of the same data agree with it.
        Buf red(t, count);
        Args x;
        x.send = inputs[r].data();
        x.recv = red.data();
        x.count = count;
        x.dtype = t;
        x.op = op;
        x.root = n - 1;
        run(c, Kind::kReduce, x);
        if (r == n - 1) {
          EXPECT_EQ(count_wrong(red.at(0), expect.at(0), count, es), 0u);
        }
        const size_t per = count / n;
        if (per) {
          Buf rs(t, per);
          x.recv = rs.data();
          x.count = per;
          run(c, Kind::kReduceScatter, x);
          EXPECT_EQ(count_wrong(rs.at(0), expect.at(r * per), per, es), 0u);
        }
      }
}

}  // namespace
}  // namespace coll_test
