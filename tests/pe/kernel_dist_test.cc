// Kernel-initiated communication: blocks of a kernel call put/put-with-signal/wait themselves.
//   - coop_put: every block moves a slice of one transfer to the next PE; the target waits on a byte count.
//   - ShardedSoftmax: a softmax over columns spread across PEs (unequal shards, some empty) against a
//     double-precision reference of the full row; log-sum-exp identical on every PE.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "pe_main.h"
#include "tessera/kernel.hpp"

namespace tk = tessera::kernel;

namespace {

TEST(KernelDist, CoopPutWithSignalDeliversEveryByte) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  for (int blocks : {1, 2, 3}) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{1000}, size_t{3} << 20}) {
      char* dst = static_cast<char*>(shmem_malloc(bytes + 1));
      uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
      std::vector<char> src(bytes);
      for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<char>((i * 7 + static_cast<size_t>(me)) & 0x7f);
      const int to = (me + 1) % n, from = (me + n - 1) % n;
      tk::launch({.block_num = blocks, .name = "coop_put"},
                 [&](tk::BlockContext& b) { tk::coop_put(b, dst, src.data(), bytes, sig, to); });
      shmem_signal_wait_until(sig, SHMEM_CMP_GE, bytes);
      EXPECT_EQ(shmem_signal_fetch(sig), bytes);
      size_t bad = 0;
      for (size_t i = 0; i < bytes; ++i) bad += dst[i] != static_cast<char>((i * 7 + static_cast<size_t>(from)) & 0x7f);
      EXPECT_EQ(bad, 0u) << "blocks " << blocks << " bytes " << bytes;
      shmem_barrier_all();
      shmem_free(sig);
      shmem_free(dst);
    }
  }
}

TEST(KernelDist, CoopPutWithoutSignalCompletesByQuiet) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const size_t bytes = 1 << 20;
  int* dst = static_cast<int*>(shmem_malloc(bytes));
  std::vector<int> src(bytes / 4, me + 1);
  tk::launch({.block_num = 2}, [&](tk::BlockContext& b) { tk::coop_put(b, dst, src.data(), bytes, nullptr, (me + 1) % n); });
  shmem_barrier_all();
  const int from = (me + n - 1) % n;
  size_t bad = 0;
  for (size_t i = 0; i < bytes / 4; ++i) bad += dst[i] != from + 1;
  EXPECT_EQ(bad, 0u);
  shmem_barrier_all();
  shmem_free(dst);
}

// Full logits are generated identically on every PE; PE p keeps columns [cut(p), cut(p+1)).
void check_sharded(tk::DType dt, int64_t rows, int64_t vocab, int blocks, int calls) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  SCOPED_TRACE(::testing::Message() << tk::dtype_name(dt) << " rows " << rows << " vocab " << vocab << " blocks " << blocks);
  // Uneven cuts, and PE 1 gets nothing when there are 4 PEs.
  auto cut = [&](int p) -> int64_t {
    if (p >= n) return vocab;
    if (n == 4 && p == 2) p = 1;
    return vocab * p * p / (n * n);
  };
  const int64_t c0 = cut(me), c1 = cut(me + 1), local = c1 - c0;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-6, 6);
  std::vector<float> full(static_cast<size_t>(rows * vocab));
  for (float& v : full) v = static_cast<float>(u(rng));
  const size_t es = tk::dtype_size(dt);
  std::vector<uint8_t> x(static_cast<size_t>(rows * local) * es + 2), y(x.size());
  auto as16 = [&](float f) { return dt == tk::DType::kBF16 ? tk::f32_to_bf16(f) : tk::f32_to_f16(f); };
  auto back = [&](const uint8_t* p) -> double {
    if (dt == tk::DType::kF32) { float f; std::memcpy(&f, p, 4); return f; }
    uint16_t h; std::memcpy(&h, p, 2);
    return dt == tk::DType::kBF16 ? tk::bf16_to_f32(h) : tk::f16_to_f32(h);
  };
  // Round the full logits to the dtype so the reference sees the same values.
  for (float& v : full) {
    if (dt == tk::DType::kF32) continue;
    uint16_t h = as16(v);
    v = dt == tk::DType::kBF16 ? tk::bf16_to_f32(h) : tk::f16_to_f32(h);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < local; ++j) {
      const float v = full[static_cast<size_t>(r * vocab + c0 + j)];
      uint8_t* p = x.data() + static_cast<size_t>(r * local + j) * es;
      if (dt == tk::DType::kF32) std::memcpy(p, &v, 4);
      else { uint16_t h = as16(v); std::memcpy(p, &h, 2); }
    }
  tk::ShardedSoftmax sm(rows + 3);
  std::vector<float> lse(static_cast<size_t>(rows));
  const double uo = dt == tk::DType::kF32 ? 0x1p-24 : dt == tk::DType::kF16 ? 0x1p-11 : 0x1p-8;
  for (int call = 0; call < calls; ++call) {
    const bool log = call % 2 == 1;
    const tk::ConstTensor xt{x.data(), dt, tk::Shape{rows, local}};
    const tk::Tensor yt{y.data(), dt, tk::Shape{rows, local}};
    if (log) sm.log_softmax(xt, yt, lse.data(), {.block_num = blocks});
    else sm.softmax(xt, yt, lse.data(), {.block_num = blocks});
    for (int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < vocab; ++j) m = std::max(m, double(full[static_cast<size_t>(r * vocab + j)]));
      for (int64_t j = 0; j < vocab; ++j) s += std::exp(full[static_cast<size_t>(r * vocab + j)] - m);
      const double l = m + std::log(s);
      ASSERT_NEAR(lse[static_cast<size_t>(r)], l, 4e-6 * (std::fabs(l) + 1)) << "row " << r;
      for (int64_t j = 0; j < local; ++j) {
        const double xv = full[static_cast<size_t>(r * vocab + c0 + j)];
        const double got = back(y.data() + static_cast<size_t>(r * local + j) * es);
        const double want = log ? xv - l : std::exp(xv - l);
        ASSERT_NEAR(got, want, (log ? 2 * uo * std::fabs(want) + 1e-5 * (std::fabs(xv) + std::fabs(l))
                                    : (4 * uo + 2e-6) * want + (dt == tk::DType::kF16 ? 0x1p-24 : 1e-30)))
            << "row " << r << " local col " << j << (log ? " (log)" : "");
      }
    }
    // Every PE must hold the same log-sum-exp, bit for bit: compare with PE 0's through a get.
    float* sym = static_cast<float*>(shmem_malloc(static_cast<size_t>(rows) * sizeof(float) + 4));
    std::memcpy(sym, lse.data(), static_cast<size_t>(rows) * sizeof(float));
    shmem_barrier_all();
    std::vector<float> pe0(static_cast<size_t>(rows));
    shmem_getmem(pe0.data(), sym, static_cast<size_t>(rows) * sizeof(float), 0);
    EXPECT_EQ(std::memcmp(pe0.data(), lse.data(), pe0.size() * sizeof(float)), 0);
    shmem_barrier_all();
    shmem_free(sym);
  }
}

TEST(KernelDist, ShardedSoftmaxMatchesFullRowReference) {
  for (tk::DType dt : {tk::DType::kF32, tk::DType::kBF16, tk::DType::kF16})
    for (int blocks : {1, 2, 3}) check_sharded(dt, 7, 1001, blocks, 4);
  check_sharded(tk::DType::kF32, 1, 5, 2, 2);      // fewer rows than blocks, tiny shards
  check_sharded(tk::DType::kF32, 64, 32000, 2, 2);  // an LLM-sized vocabulary
}

TEST(KernelDist, ShardedSoftmaxBadInput) {
  tk::ShardedSoftmax sm(4);
  std::vector<float> x(40), y(40);
  EXPECT_THROW(sm.softmax(tk::ConstTensor{x.data(), tk::DType::kF32, tk::Shape{5, 8}},
                          tk::Tensor{y.data(), tk::DType::kF32, tk::Shape{5, 8}}),
               tk::Error);  // more rows than max_rows
  EXPECT_THROW(sm.softmax(tk::ConstTensor{nullptr, tk::DType::kF32, tk::Shape{2, 8}},
                          tk::Tensor{y.data(), tk::DType::kF32, tk::Shape{2, 8}}),
               tk::Error);
  EXPECT_THROW(sm.softmax(tk::ConstTensor{x.data(), tk::DType::kF32, tk::Shape{40}},
                          tk::Tensor{y.data(), tk::DType::kF32, tk::Shape{40}}),
               tk::Error);
}

}  // namespace
