// The data paths of the collectives on one host: the single-copy path (process_vm_readv; Cma.*, and
// SingleCopy.*, run on its own so that a host without the path reports a skip) and zero copy from the
// symmetric heap (ZeroCopy.*), each checked against the reference. Runs at 1, 2, 3, 4, 7 and 8 PEs
// (coll_algos.cmake), also with the single-copy path off and with streaming staging stores.
#include <shmem.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll/single_copy.h"
#include "coll/engine.h"
#include "coll_common.h"
#include "pe_main.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

// The single-copy path: every member agrees on it, TESSERA_COLL_CMA=0 turns it off (SingleCopy below: large
// counts take several bounce-buffer pieces per slice, 1 MiB of bounce: over 256 Ki float32 per peer at 2 ranks).
TEST(Cma, MembersAgreeAndEnvTurnsItOff) {
  Communicator& c = world();
  const char* env = std::getenv("TESSERA_COLL_CMA");
  if (env && std::strcmp(env, "0") == 0) {
    EXPECT_FALSE(c.cma);
  }
  std::vector<uint8_t> all(static_cast<size_t>(c.size));
  const uint8_t mine = c.cma ? 1 : 0;
  Args a;
  a.send = &mine;
  a.recv = all.data();
  a.count = 1;
  a.dtype = DType::kUint8;
  run(c, Kind::kAllgather, a);
  for (int m = 0; m < c.size; ++m) EXPECT_EQ(all[m], mine) << "rank " << m;
  const Algorithm* ar = find_algorithm(Kind::kAllreduce, "cma");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(fits(*ar, make_shape(c, Kind::kAllreduce, 64 << 20)), c.cma);
}

// Why the single-copy algorithms cannot run here (empty when they can): the SingleCopy tests skip, and say so.
std::string no_single_copy(Kind k, size_t bytes) {
  Communicator& c = world();
  if (fits(*find_algorithm(k, "cma"), make_shape(c, k, bytes))) return "";
  if (c.size == 1) return "one member: no peer to read from";
  if (!cma_enabled()) return "TESSERA_COLL_CMA=0 turns the single-copy path off";
  if (!c.cma) return "process_vm_readv between the members is refused (ptrace rights: Yama, seccomp, container)";
  return std::string("cma does not support ") + kind_name(k) + " of " + std::to_string(bytes) + " bytes here";
}

// Run alone (coll_algos.cmake): where the single-copy path is missing, every test here skips and ctest
// reports a skip.
TEST(SingleCopy, LargeCountsSpanSeveralBouncePieces) {
  const size_t count = 1200001;  // odd; 4.8 MB of float32
  for (Kind k : {Kind::kAllreduce, Kind::kReduceScatter}) {
    const Algorithm* a = find_algorithm(k, "cma");
    if (std::string why = no_single_copy(k, count * 4); !why.empty()) GTEST_SKIP() << why;
    for (bool ip : {false, true}) check_reduction(k, a, k == Kind::kAllreduce ? count : count / 2, ip, DType::kFloat32, Op::kSum);
  }
}

// Buffers whose page offsets differ by 1..31 bytes from a peer's make the kernel's copy slow
// (base/memcopy.h: copy_aliases), so cma_read goes through a bounce buffer placed like the source. Each
// rank's buffers sit 8 bytes further into a page than the previous rank's: some pairs take the bounce
// path, others read directly; both must deliver every byte.
TEST(SingleCopy, BuffersAtShiftedPageOffsets) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  const size_t count = 300001;  // 1.2 MB of float32: several bounce pieces
  const size_t shift = 8 * static_cast<size_t>(r) % 4096;
  const Algorithm* ar = find_algorithm(Kind::kAllreduce, "cma");
  const Algorithm* ag = find_algorithm(Kind::kAllgather, "cma");
  if (std::string why = no_single_copy(Kind::kAllreduce, count * 4); !why.empty()) GTEST_SKIP() << why;
  auto page_at = [&](std::vector<char>& v, size_t elems) {
    v.assign(elems * 4 + 2 * 4096, 0);
    const uintptr_t p = (reinterpret_cast<uintptr_t>(v.data()) + 4095) & ~uintptr_t{4095};
    return reinterpret_cast<float*>(p + shift);
  };
  std::vector<char> sv, rv;
  float* send = page_at(sv, count);
  float* recv = page_at(rv, count * n);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(val(r, i));
  Args x;
  x.count = count;
  x.dtype = DType::kFloat32;
  x.op = Op::kSum;
  x.send = send;
  x.recv = recv;
  run(c, Kind::kAllreduce, x, ar);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double e = 0;
    for (int m = 0; m < n; ++m) e += val(m, i);
    wrong += recv[i] != static_cast<float>(e);
  }
  EXPECT_EQ(wrong, 0u) << "allreduce";
  run(c, Kind::kAllgather, x, ag);
  wrong = 0;
  for (int m = 0; m < n; ++m)
    for (size_t i = 0; i < count; ++i) wrong += recv[m * count + i] != static_cast<float>(val(m, i));
  EXPECT_EQ(wrong, 0u) << "allgather";
}

// Zero copy: with every member's buffers in the symmetric heap, the direct algorithms read them in place
// (3 steps for allreduce, 2 for the others, whatever the size; allreduce and alltoall only when members
// outnumber CPUs); when one member's buffer is private, all fall back to the staged algorithm (many more
// steps). Results checked against the reference either way.
uint64_t steps_of_last_call(Communicator& c) { return c.ctrl[c.rank]->rec[c.seq % kRecords].tags.load(); }

TEST(ZeroCopy, SymmetricBuffersAreReadInPlaceElseStaged) {
  Communicator& c = world();
  const int n = c.size, r = c.rank;
  if (n == 1) GTEST_SKIP() << "one member: nothing to share";
  const size_t count = 37003;  // 148 KB of float32: more than one staging slot (test staging: 64 KiB)
  const DType t = DType::kFloat32;
  const Op op = Op::kSum;
  const size_t es = 4, all_bytes = count * es * static_cast<size_t>(n);
  char* sym_send = static_cast<char*>(shmem_malloc(all_bytes));
  char* sym_recv = static_cast<char*>(shmem_malloc(all_bytes));
  ASSERT_TRUE(sym_send && sym_recv);
  std::vector<char> priv_send(all_bytes), priv_recv(all_bytes);
  for (int private_rank : {-1, n - 1})
    for (bool ip : {false, true}) {
      SCOPED_TRACE(std::string(private_rank < 0 ? "all symmetric" : "last rank private") + (ip ? " in-place" : ""));
      const bool sym = private_rank != r;
      char* send = sym ? sym_send : priv_send.data();
      char* recv = ip ? send : sym ? sym_recv : priv_recv.data();
      auto fill = [&](size_t elems, size_t offset_elems) {
        for (size_t i = 0; i < elems; ++i) ref::store(send, i, t, ref::input_value(r, offset_elems + i, t, op));
      };
      // allreduce
      fill(count, 0);
      Buf expect(t, count * n);
      for (size_t i = 0; i < count; ++i) ref::expected(expect.at(i), i, t, op, n);
      Args a;
      a.send = send;
      a.recv = recv;
      a.count = count;
      a.dtype = t;
      a.op = op;
      run(c, Kind::kAllreduce, a, find_algorithm(Kind::kAllreduce, "direct"));
      EXPECT_EQ(count_wrong(recv, expect.at(0), count, es), 0u);
      if (private_rank < 0 && c.oversubscribed) {  // with a CPU each, allreduce keeps the staged path
        EXPECT_EQ(steps_of_last_call(c), 3u);
      } else {
        EXPECT_GT(steps_of_last_call(c), 3u);
      }
      // reduce_scatter (in place: the output is this rank's block of the input)
      fill(count * n, 0);
      for (size_t i = 0; i < count; ++i) ref::expected(expect.at(i), r * count + i, t, op, n);
      a.recv = ip ? send + r * count * es : recv;
      run(c, Kind::kReduceScatter, a, find_algorithm(Kind::kReduceScatter, "direct"));
      EXPECT_EQ(count_wrong(static_cast<const char*>(a.recv), expect.at(0), count, es), 0u);
      if (private_rank < 0) {
        EXPECT_EQ(steps_of_last_call(c), 2u);
      } else {
        EXPECT_GT(steps_of_last_call(c), 2u);
      }
      // allgather (in place: this rank's piece already sits in its block of the output)
      for (size_t i = 0; i < count; ++i) ref::store(ip ? recv + r * count * es : send, i, t, val(r, i));
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < count; ++i) expect.set(m * count + i, val(m, i));
      Args g;
      g.send = ip ? recv + r * count * es : send;
      g.recv = ip ? recv : (sym ? sym_recv : priv_recv.data());
      g.count = count;
      g.dtype = t;
      run(c, Kind::kAllgather, g, find_algorithm(Kind::kAllgather, "direct"));
      EXPECT_EQ(count_wrong(static_cast<const char*>(g.recv), expect.at(0), count * n, es), 0u);
      if (private_rank < 0) {
        EXPECT_EQ(steps_of_last_call(c), 2u);
      }
      // broadcast from the last rank (private in the fallback case)
      for (size_t i = 0; i < count; ++i) {
        ref::store(send, i, t, val(r, i));
        expect.set(i, val(n - 1, i));
      }
      Args b;
      b.send = send;
      b.recv = ip ? send : recv;
      b.count = count;
      b.dtype = t;
      b.root = n - 1;
      run(c, Kind::kBroadcast, b, find_algorithm(Kind::kBroadcast, "direct"));
      EXPECT_EQ(count_wrong(static_cast<const char*>(b.recv), expect.at(0), count, es), 0u);
      if (private_rank < 0) {
        EXPECT_EQ(steps_of_last_call(c), 2u);
      } else {
        EXPECT_GT(steps_of_last_call(c), 2u);
      }
      // alltoall (in place keeps the staged algorithm)
      const size_t per = count / static_cast<size_t>(n) + 1;
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < per; ++i) {
          ref::store(send, m * per + i, t, val(r, m * per + i));
          expect.set(m * per + i, val(m, r * per + i));
        }
      Args x;
      x.send = send;
      x.recv = recv;
      x.count = per;
      x.dtype = t;
      run(c, Kind::kAlltoall, x, find_algorithm(Kind::kAlltoall, "direct"));
      EXPECT_EQ(count_wrong(recv, expect.at(0), per * n, es), 0u);
      if (private_rank < 0 && !ip && per * es > c.slot_bytes && c.oversubscribed) {
        EXPECT_EQ(steps_of_last_call(c), 2u);
      }
    }
  shmem_free(sym_recv);
  shmem_free(sym_send);
}

}  // namespace
}  // namespace coll_test
