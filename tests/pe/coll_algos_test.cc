// Every collective x every algorithm x counts {0, 1, odd, chunked} x in-place, checked against a reference;
// the full type x op matrix of the reductions with every algorithm, and through the public C and C++ APIs;
// v variants. (Barrier, send/recv groups and split: coll_groups_test.cc; the data paths, single copy and zero
// copy: coll_paths_test.cc; the consistency check's mismatches: coll_consistency_test.cc; the LL protocol at
// its limits: coll_ll_test.cc.)
// Runs at 1, 2, 3, 4, 7 and 8 PEs (coll_algos.cmake).
#include <shmem.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <tessera/coll.hpp>

#include "coll/engine.h"
#include "coll_common.h"
#include "pe_main.h"

namespace coll_test {
namespace {

const size_t kCounts[] = {0, 1, 13, 1000, 37003};
struct TypeOp {
  DType t;
  Op op;
};
const TypeOp kReps[] = {{DType::kFloat32, Op::kSum}, {DType::kBFloat16, Op::kAvg}, {DType::kInt8, Op::kMax},
                        {DType::kFloat16, Op::kProd}, {DType::kInt64, Op::kMin}, {DType::kUint32, Op::kSum}};

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);


TEST(Allreduce, EveryAlgorithmCountInPlaceAndType) {
  for (const Algorithm* a : algos_of(Kind::kAllreduce))
    for (size_t count : kCounts)
      for (bool ip : {false, true})
        for (const TypeOp& to : kReps) {
          if (fits(*a, make_shape(world(), Kind::kAllreduce, count * dtype_size(to.t))))
            check_reduction(Kind::kAllreduce, a, count, ip, to.t, to.op);
        }
}

// Every type x operator, with the selected algorithm and with every algorithm forced in turn, in place and
// out of place; also reduce_scatter and reduce (root: the last rank) with every algorithm forced.
TEST(Reductions, FullTypeOpMatrixEveryAlgorithmInPlaceAndNot) {
  const int n = world().size;
  for (int t = 0; t < kNumDTypes; ++t)
    for (int op = 0; op < kNumOps; ++op) {
      if (!op_applies(static_cast<DType>(t), static_cast<Op>(op))) continue;
      const DType dt = static_cast<DType>(t);
      check_reduction(Kind::kAllreduce, nullptr, 77, false, dt, static_cast<Op>(op));
      for (Kind k : {Kind::kAllreduce, Kind::kReduceScatter, Kind::kReduce}) {
        const size_t count = k == Kind::kAllreduce ? 5001 : 1001;
        for (const Algorithm* a : algos_of(k))
          if (fits(*a, make_shape(world(), k, count * dtype_size(dt))))
            for (bool ip : {false, true})
              check_reduction(k, a, count, ip, dt, static_cast<Op>(op), k == Kind::kReduce ? n - 1 : 0);
      }
    }
}

TEST(ReduceScatter, EveryAlgorithm) {
  for (const Algorithm* a : algos_of(Kind::kReduceScatter))
    for (size_t count : kCounts)
      for (bool ip : {false, true})
        for (const TypeOp& to : kReps)
          if (fits(*a, make_shape(world(), Kind::kReduceScatter, count * dtype_size(to.t))))
            check_reduction(Kind::kReduceScatter, a, count, ip, to.t, to.op);
}

TEST(Reduce, EveryAlgorithmAndRoot) {
  const int n = world().size;
  for (const Algorithm* a : algos_of(Kind::kReduce))
    for (size_t count : kCounts)
      for (int root : {0, n - 1})
        for (const TypeOp& to : kReps)
          if (fits(*a, make_shape(world(), Kind::kReduce, count * dtype_size(to.t))))
            check_reduction(Kind::kReduce, a, count, root == 0, to.t, to.op, root);
}


TEST(Allgather, EveryAlgorithm) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  for (const Algorithm* a : algos_of(Kind::kAllgather))
    for (size_t count : kCounts)
      for (bool ip : {false, true})
        for (DType t : {DType::kFloat32, DType::kUint8, DType::kFloat64}) {
          if (!fits(*a, make_shape(c, Kind::kAllgather, count * dtype_size(t)))) continue;
          SCOPED_TRACE(trace(a, count, ip, t, Op::kSum));
          Buf send(t, count), recv(t, count * n), expect(t, count * n);
          for (size_t i = 0; i < count; ++i) send.set(i, val(r, i));
          for (int m = 0; m < n; ++m)
            for (size_t i = 0; i < count; ++i) expect.set(m * count + i, val(m, i));
          Args x;
          x.count = count;
          x.dtype = t;
          x.recv = recv.data();
          if (ip) std::memcpy(recv.at(r * count), send.data(), count * dtype_size(t));
          x.send = ip ? static_cast<const void*>(recv.at(r * count)) : send.data();
          const std::vector<char> sent = send.b;
          run(c, Kind::kAllgather, x, a);
          EXPECT_EQ(count_wrong(recv.at(0), expect.at(0), count * n, dtype_size(t)), 0u);
          EXPECT_EQ(count_wrong(send.b.data(), sent.data(), count, dtype_size(t)), 0u) << "send buffer changed";
        }
}

TEST(Broadcast, EveryAlgorithmAndRoot) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  for (const Algorithm* a : algos_of(Kind::kBroadcast))
    for (size_t count : kCounts)
      for (int root : {0, n / 2, n - 1})
        for (bool ip : {false, true}) {
          if (!fits(*a, make_shape(c, Kind::kBroadcast, count * 4))) continue;
          SCOPED_TRACE(trace(a, count, ip, DType::kInt32, Op::kSum) + " root " + std::to_string(root));
          Buf send(DType::kInt32, count), recv(DType::kInt32, count), expect(DType::kInt32, count);
          for (size_t i = 0; i < count; ++i) {
            send.set(i, val(r, i));
            expect.set(i, val(root, i));
          }
          if (ip) recv.b = send.b;
          Args x;
          x.count = count;
          x.dtype = DType::kInt32;
          x.root = root;
          x.send = ip ? recv.data() : send.data();
          x.recv = recv.data();
          const std::vector<char> sent = send.b;
          run(c, Kind::kBroadcast, x, a);
          EXPECT_EQ(count_wrong(recv.at(0), expect.at(0), count, 4), 0u);
          EXPECT_EQ(count_wrong(send.b.data(), sent.data(), count, 4), 0u) << "send buffer changed";
        }
}

TEST(GatherScatter, EveryRootEveryAlgorithm) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  for (const char* name : {"direct", "ll"})
    for (size_t count : kCounts)
      for (int root : {0, n - 1})
        for (bool ip : {false, true}) {
          const Algorithm* ga = find_algorithm(Kind::kGather, name);
          const Algorithm* sc = find_algorithm(Kind::kScatter, name);
          ASSERT_TRUE(ga && sc) << name;
          const bool gather_ok = fits(*ga, make_shape(c, Kind::kGather, count * 8));
          const bool scatter_ok = fits(*sc, make_shape(c, Kind::kScatter, count * 8));
          if (!gather_ok && !scatter_ok) continue;
          SCOPED_TRACE(std::string(name) + " count " + std::to_string(count) + " root " + std::to_string(root) +
                       (ip ? " in place" : ""));
          Buf mine(DType::kUint64, count), all(DType::kUint64, count * n), expect(DType::kUint64, count * n);
          for (size_t i = 0; i < count; ++i) mine.set(i, val(r, i));
          for (int m = 0; m < n; ++m)
            for (size_t i = 0; i < count; ++i) expect.set(m * count + i, val(m, i));
          if (gather_ok) {
            // in place at the root: its piece already sits at its offset of the result
            Args g;
            g.count = count;
            g.dtype = DType::kUint64;
            g.root = root;
            g.send = mine.data();
            g.recv = all.data();
            if (ip && r == root) {
              if (count) std::memcpy(all.at(static_cast<size_t>(r) * count), mine.data(), count * 8);
              g.send = all.at(static_cast<size_t>(r) * count);
            }
            run(c, Kind::kGather, g, ga);
            if (r == root) {
              EXPECT_EQ(count_wrong(all.at(0), expect.at(0), count * n, 8), 0u) << "gather";
            }
          }
          if (scatter_ok) {
            // scatter every member's piece from the root (in place at the root: its piece is read where
            // it already is)
            Buf src(DType::kUint64, count * n), back(DType::kUint64, count);
            for (int m = 0; m < n; ++m)
              for (size_t i = 0; i < count; ++i) src.set(m * count + i, val(m, i));
            Args s;
            s.count = count;
            s.dtype = DType::kUint64;
            s.root = root;
            s.send = r == root ? src.data() : nullptr;
            s.recv = ip && r == root ? src.at(static_cast<size_t>(r) * count) : back.data();
            run(c, Kind::kScatter, s, sc);
            EXPECT_EQ(count_wrong(static_cast<const char*>(s.recv), mine.at(0), count, 8), 0u) << "scatter";
          }
        }
}

TEST(Alltoall, EveryAlgorithm) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  for (const Algorithm* a : algos_of(Kind::kAlltoall))
    for (size_t count : kCounts)
      for (bool ip : {false, true}) {
        if (!fits(*a, make_shape(c, Kind::kAlltoall, count * 4))) continue;
        SCOPED_TRACE(trace(a, count, ip, DType::kFloat32, Op::kSum));
        Buf send(DType::kFloat32, count * n), recv(DType::kFloat32, count * n), expect(DType::kFloat32, count * n);
        // element i of my block for member m: val(r, m*count+i); I receive val(m, r*count+i) from m
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < count; ++i) {
            send.set(m * count + i, val(r, m * count + i));
            expect.set(m * count + i, val(m, r * count + i));
          }
        if (ip) recv.b = send.b;
        Args x;
        x.count = count;
        x.dtype = DType::kFloat32;
        x.send = ip ? recv.data() : send.data();
        x.recv = recv.data();
        const std::vector<char> sent = send.b;
        run(c, Kind::kAlltoall, x, a);
        EXPECT_EQ(count_wrong(recv.at(0), expect.at(0), count * n, 4), 0u);
        EXPECT_EQ(count_wrong(send.b.data(), sent.data(), count * n, 4), 0u) << "send buffer changed";
      }
}

TEST(VVariants, AllgathervAlltoallvReduceScatterv) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  for (size_t scale : {size_t{0}, size_t{1}, size_t{5000}}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    auto cnt = [&](int m) { return scale * static_cast<size_t>(m % 3) + static_cast<size_t>(m); };  // uneven, some 0
    // allgatherv with gaps between blocks
    std::vector<size_t> counts(n), displs(n);
    size_t total = 0;
    for (int m = 0; m < n; ++m) {
      counts[m] = cnt(m);
      displs[m] = total + 1;
      total += counts[m] + 1;
    }
    Buf mine(DType::kInt32, counts[r]), all(DType::kInt32, total), expect(DType::kInt32, total);
    for (size_t i = 0; i < counts[r]; ++i) mine.set(i, val(r, i));
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < counts[m]; ++i) expect.set(displs[m] + i, val(m, i));
    Args g;
    g.dtype = DType::kInt32;
    g.count = counts[r];
    g.send = mine.data();
    g.recv = all.data();
    g.rcounts = counts.data();
    g.rdispls = displs.data();
    run(c, Kind::kAllgatherv, g);
    EXPECT_EQ(count_wrong(all.at(0), expect.at(0), total, 4), 0u);

    // alltoallv: I send cnt(r+m) elements to m
    std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
    size_t st = 0, rt = 0;
    for (int m = 0; m < n; ++m) {
      sc[m] = cnt(r + m);
      sd[m] = st;
      st += sc[m];
      rc[m] = cnt(m + r);
      rd[m] = rt;
      rt += rc[m];
    }
    Buf s(DType::kInt32, st), d(DType::kInt32, rt), e(DType::kInt32, rt);
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < sc[m]; ++i) s.set(sd[m] + i, val(r, 1000 * m + i));
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < rc[m]; ++i) e.set(rd[m] + i, val(m, 1000 * r + i));
    Args v;
    v.dtype = DType::kInt32;
    v.send = s.data();
    v.recv = d.data();
    v.scounts = sc.data();
    v.sdispls = sd.data();
    v.rcounts = rc.data();
    v.rdispls = rd.data();
    run(c, Kind::kAlltoallv, v);
    EXPECT_EQ(count_wrong(d.at(0), e.at(0), rt, 4), 0u);

    // reduce_scatterv: member m gets counts[m] elements
    size_t in = 0;
    for (int m = 0; m < n; ++m) in += counts[m];
    size_t off = 0;
    for (int m = 0; m < r; ++m) off += counts[m];
    Buf rs_in(DType::kFloat32, in), rs_out(DType::kFloat32, counts[r]), rs_exp(DType::kFloat32, counts[r]);
    for (size_t i = 0; i < in; ++i) rs_in.set(i, ref::input_value(r, i, DType::kFloat32, Op::kSum));
    for (size_t i = 0; i < counts[r]; ++i) ref::expected(rs_exp.at(i), off + i, DType::kFloat32, Op::kSum, n);
    Args x;
    x.dtype = DType::kFloat32;
    x.op = Op::kSum;
    x.count = counts[r];
    x.send = rs_in.data();
    x.recv = rs_out.data();
    x.rcounts = counts.data();
    run(c, Kind::kReduceScatterv, x);
    EXPECT_EQ(count_wrong(rs_out.at(0), rs_exp.at(0), counts[r], 4), 0u);
  }
}

// gatherv and scatterv, uneven counts (some 0) and gaps between the blocks at the root, every root; the
// gaps must stay untouched. Through the C++ API once (the C entry points underneath).
TEST(VVariants, GathervScattervEveryRoot) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  const int64_t kGap = -77;
  for (size_t scale : {size_t{0}, size_t{1}, size_t{5000}})
    for (int root : {0, n - 1}) {
      SCOPED_TRACE("scale " + std::to_string(scale) + " root " + std::to_string(root));
      auto cnt = [&](int m) { return scale * static_cast<size_t>((m + 1) % 3) + static_cast<size_t>(m % 2); };
      std::vector<size_t> counts(n), displs(n);
      size_t total = 0;
      for (int m = 0; m < n; ++m) {
        counts[m] = cnt(m);
        displs[m] = total + 2;  // a gap of 2 before every block
        total += counts[m] + 2;
      }
      // gatherv: member m's block at displs[m]
      Buf mine(DType::kInt64, cnt(r)), all(DType::kInt64, total), expect(DType::kInt64, total);
      for (size_t i = 0; i < cnt(r); ++i) mine.set(i, val(r, i));
      for (size_t i = 0; i < total; ++i) all.set(i, static_cast<double>(kGap)), expect.set(i, static_cast<double>(kGap));
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < counts[m]; ++i) expect.set(displs[m] + i, val(m, i));
      Args g;
      g.dtype = DType::kInt64;
      g.root = root;
      g.count = cnt(r);
      g.send = mine.data();
      g.recv = all.data();
      g.rcounts = r == root ? counts.data() : nullptr;  // read at the root only
      g.rdispls = r == root ? displs.data() : nullptr;
      run(c, Kind::kGatherv, g);
      if (r == root) {
        EXPECT_EQ(count_wrong(all.at(0), expect.at(0), total, 8), 0u);
      }
      // scatterv: the root's blocks (at displs, gaps between) back to their members
      Buf back(DType::kInt64, cnt(r) + 1);
      back.set(cnt(r), static_cast<double>(kGap));  // one element past the block: untouched
      Args s;
      s.dtype = DType::kInt64;
      s.root = root;
      s.count = cnt(r);
      s.send = r == root ? all.data() : nullptr;
      s.recv = back.data();
      s.scounts = r == root ? counts.data() : nullptr;
      s.sdispls = r == root ? displs.data() : nullptr;
      run(c, Kind::kScatterv, s);
      EXPECT_EQ(count_wrong(back.at(0), mine.at(0), cnt(r), 8), 0u);
      EXPECT_EQ(back.get(cnt(r)), static_cast<double>(kGap));
    }
  // The public API: every member's rank, gathered at the last member with a displacement of 1, scattered
  // back doubled.
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  const int last = comm.size() - 1;
  std::vector<int32_t> gathered(static_cast<size_t>(comm.size()) + 1, -1), doubled(static_cast<size_t>(comm.size()) + 1);
  std::vector<size_t> ones(static_cast<size_t>(comm.size()), 1), disp(static_cast<size_t>(comm.size()));
  for (size_t m = 0; m < disp.size(); ++m) disp[m] = m + 1;
  int32_t me = comm.rank(), got = -1;
  comm.gatherv(&me, 1, gathered.data(), ones.data(), disp.data(), tessera::coll::DataType::kInt32, last);
  if (comm.rank() == last) {
    EXPECT_EQ(gathered[0], -1);
    for (int m = 0; m < comm.size(); ++m) EXPECT_EQ(gathered[static_cast<size_t>(m) + 1], m);
    for (size_t i = 0; i < gathered.size(); ++i) doubled[i] = 2 * gathered[i];
  }
  comm.scatterv(doubled.data(), ones.data(), disp.data(), &got, 1, tessera::coll::DataType::kInt32, last);
  EXPECT_EQ(got, 2 * comm.rank());
}

// The public C and C++ APIs with every type and operator, against the reference: allreduce (C out of place,
// C++ in place), reduce_scatter and reduce (C, C++). Each public enumerator is paired with the internal one
// by name here, independently of the library's own mapping.
TEST(Api, EveryTypeAndOperator) {
  using tessera::coll::DataType;
  using tessera::coll::RedOp;
  struct T3 {
    tesseraDataType_t c;
    DataType cpp;
    DType t;
  };
  const T3 types[] = {{tesseraInt8, DataType::kInt8, DType::kInt8},
                      {tesseraUint8, DataType::kUint8, DType::kUint8},
                      {tesseraInt32, DataType::kInt32, DType::kInt32},
                      {tesseraUint32, DataType::kUint32, DType::kUint32},
                      {tesseraInt64, DataType::kInt64, DType::kInt64},
                      {tesseraUint64, DataType::kUint64, DType::kUint64},
                      {tesseraFloat16, DataType::kFloat16, DType::kFloat16},
                      {tesseraBfloat16, DataType::kBFloat16, DType::kBFloat16},
                      {tesseraFloat32, DataType::kFloat32, DType::kFloat32},
                      {tesseraFloat64, DataType::kFloat64, DType::kFloat64}};
  struct O3 {
    tesseraRedOp_t c;
    RedOp cpp;
    Op op;
  };
  const O3 ops[] = {{tesseraSum, RedOp::kSum, Op::kSum},
                    {tesseraProd, RedOp::kProd, Op::kProd},
                    {tesseraMin, RedOp::kMin, Op::kMin},
                    {tesseraMax, RedOp::kMax, Op::kMax},
                    {tesseraAvg, RedOp::kAvg, Op::kAvg}};
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  const int n = comm.size(), r = comm.rank(), root = n - 1;
  const size_t count = 77;
  for (const T3& ty : types)
    for (const O3& o : ops) {
      SCOPED_TRACE(std::string(dtype_name(ty.t)) + " " + op_name(o.op));
      const size_t es = dtype_size(ty.t);
      Buf in(ty.t, count * n), out(ty.t, count * n), expect(ty.t, count * n);
      for (size_t i = 0; i < count * n; ++i) in.set(i, ref::input_value(r, i, ty.t, o.op));
      for (size_t i = 0; i < count * n; ++i) ref::expected(expect.at(i), i, ty.t, o.op, n);
      ASSERT_EQ(tesseraAllReduce(in.data(), out.data(), count, ty.c, o.c, comm.handle()), tesseraSuccess);
      EXPECT_EQ(count_wrong(out.at(0), expect.at(0), count, es), 0u) << "tesseraAllReduce";
      Buf io = in;
      comm.allreduce(io.data(), io.data(), count, ty.cpp, o.cpp);
      EXPECT_EQ(count_wrong(io.at(0), expect.at(0), count, es), 0u) << "Comm::allreduce in place";
      ASSERT_EQ(tesseraReduceScatter(in.data(), out.data(), count, ty.c, o.c, comm.handle()), tesseraSuccess);
      EXPECT_EQ(count_wrong(out.at(0), expect.at(static_cast<size_t>(r) * count), count, es), 0u)
          << "tesseraReduceScatter";
      std::fill(out.b.begin(), out.b.end(), 0);
      ASSERT_EQ(tesseraReduce(in.data(), out.data(), count, ty.c, o.c, root, comm.handle()), tesseraSuccess);
      if (r == root) {
        EXPECT_EQ(count_wrong(out.at(0), expect.at(0), count, es), 0u) << "tesseraReduce";
      }
      std::fill(out.b.begin(), out.b.end(), 0);
      comm.reduce(in.data(), out.data(), count, ty.cpp, o.cpp, 0);
      if (r == 0) {
        EXPECT_EQ(count_wrong(out.at(0), expect.at(0), count, es), 0u) << "Comm::reduce";
      }
    }
}

TEST(Api, ErrorsNameTheValueAndTheLimit) {
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  float x = 1;
  try {
    comm.broadcast(&x, &x, 1, tessera::coll::DataType::kFloat32, comm.size());
    FAIL() << "no error for a root out of range";
  } catch (const tessera::coll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("root " + std::to_string(comm.size())), std::string::npos) << e.what();
  }
  EXPECT_EQ(tesseraAllReduce(nullptr, &x, 1, tesseraFloat32, tesseraSum, comm.handle()), tesseraInvalidArgument);
  // Every error names the routine first, whichever layer found it (coll/handle.h).
  EXPECT_EQ(std::string(tesseraGetLastError()).rfind("tesseraAllReduce: send buffer is null with a count of 1", 0), 0u)
      << tesseraGetLastError();
  try {
    comm.allreduce(nullptr, &x, 1, tessera::coll::DataType::kFloat32, tessera::coll::RedOp::kSum);
    FAIL() << "no error for a null send buffer";
  } catch (const tessera::coll::Error& e) {
    EXPECT_EQ(std::string(e.what()), "invalid argument: tesseraAllReduce: send buffer is null with a count of 1");
  }
  EXPECT_EQ(tesseraAllReduce(&x, &x, 1, static_cast<tesseraDataType_t>(42), tesseraSum, comm.handle()),
            tesseraInvalidArgument);
  EXPECT_EQ(tesseraAllReduce(&x, &x, 1, tesseraFloat32, tesseraSum, nullptr), tesseraInvalidArgument);
  // v variants at the root (every member its own root here, so every member fails before communicating)
  const int me = comm.rank();
  EXPECT_EQ(tesseraGatherV(&x, 1, &x, nullptr, nullptr, tesseraFloat32, me, comm.handle()), tesseraInvalidArgument);
  EXPECT_NE(std::string(tesseraGetLastError()).find("tesseraGatherV: the root's count/displacement arrays must not be null"),
            std::string::npos) << tesseraGetLastError();
  std::vector<size_t> twos(static_cast<size_t>(comm.size()), 2), zeros(static_cast<size_t>(comm.size()), 0);
  EXPECT_EQ(tesseraScatterV(&x, twos.data(), zeros.data(), &x, 1, tesseraFloat32, me, comm.handle()),
            tesseraInvalidArgument);
  EXPECT_NE(std::string(tesseraGetLastError())
                .find("tesseraScatterV: the root (rank " + std::to_string(me) + ") receives 1 elements itself but its counts[" +
                      std::to_string(me) + "] is 2"),
            std::string::npos) << tesseraGetLastError();
}

}  // namespace
}  // namespace coll_test
