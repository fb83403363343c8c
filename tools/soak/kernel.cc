// Kernel steps: raw launches with random block counts (a two-phase sum through the workspace and sync, and
// rounds of neighbour exchange across sync), the reduction and softmax operators against serial references,
// and the block-cooperative put with signal to another PE. Operators run on f32 here: inputs are small
// integers or powers of two so that sums, maxima and products are exact, and softmax is compared with a
// tolerance (the library computes it in f32 with f64 accumulations: docs/kernel.md).
#include <tessera/kernel.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

#include "soak.h"

namespace tessera::soak {

namespace kn = tessera::kernel;

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

void raw_sum(Soak& s, Rng& r) {
  const int blocks = 1 + r.pick(8);
  const size_t len = r.below(100000);
  std::vector<int64_t> v(len);
  for (size_t i = 0; i < len; ++i) v[i] = static_cast<int64_t>(mix(s.key(s.me, 30) + i) % 2001) - 1000;
  int64_t want = 0;
  for (int64_t x : v) want += x;
  const int rounds = 1 + r.pick(4);
  int64_t got = 0;
  std::atomic<bool> neighbours_ok{true};
  kn::launch({.block_num = blocks, .workspace_bytes = sizeof(int64_t) * 2 * 8, .name = "soak_sum"},
             [&](kn::BlockContext& b) {
               auto* part = b.workspace_as<int64_t>();
               const size_t lo = len * b.block_idx() / b.block_num(), hi = len * (b.block_idx() + 1) / b.block_num();
               int64_t acc = 0;
               for (size_t i = lo; i < hi; ++i) acc += v[i];
               part[b.block_idx()] = acc;
               b.sync();  // every partial is visible to every block
               if (b.block_idx() == 0) {
                 int64_t t = 0;
                 for (int i = 0; i < b.block_num(); ++i) t += part[i];
                 got = t;
               }
               // Rounds of exchange: each block writes its round tag, syncs, reads its neighbour's.
               int64_t* tag = part + 8;
               for (int k = 0; k < rounds; ++k) {
                 b.sync();
                 tag[b.block_idx()] = k * 100 + b.block_idx();
                 b.sync();
                 const int nb = (b.block_idx() + 1) % b.block_num();
                 if (tag[nb] != k * 100 + nb) neighbours_ok = false;
               }
             });
  s.check(got == want, kKernel, "kernel::launch two-phase sum", std::to_string(want), std::to_string(got) + " (" +
          std::to_string(blocks) + " blocks)");
  s.check(neighbours_ok.load(), kKernel, "kernel BlockContext::sync (neighbour's store visible after it)", "visible",
          "stale value");
}

double ref_reduce(kn::ReduceOp op, const std::vector<float>& x, const std::vector<size_t>& idx) {
  double acc = op == kn::ReduceOp::kProd ? 1 : op == kn::ReduceOp::kMax ? -INFINITY : op == kn::ReduceOp::kMin ? INFINITY : 0;
  for (size_t i : idx) {
    const double v = x[i];
    switch (op) {
      case kn::ReduceOp::kSum: case kn::ReduceOp::kMean: acc += v; break;
      case kn::ReduceOp::kProd: acc *= v; break;
      case kn::ReduceOp::kMax: acc = std::max(acc, v); break;
      case kn::ReduceOp::kMin: acc = std::min(acc, v); break;
    }
  }
  if (op == kn::ReduceOp::kMean) acc /= static_cast<double>(idx.size());
  return acc;
}

void op_reduce(Soak& s, Rng& r) {
  const auto op = static_cast<kn::ReduceOp>(r.pick(5));
  const int rank = 1 + r.pick(3);
  int64_t dims[3];
  for (int i = 0; i < rank; ++i) dims[i] = 1 + static_cast<int64_t>(r.log_size(1, rank == 1 ? 50000 : 300)) - 1;
  kn::Shape sh;
  sh.rank = rank;
  for (int i = 0; i < rank; ++i) sh.dims[i] = dims[i];
  const bool all = r.pick(3) == 0;
  const int axis = all ? kn::kAllAxes : r.pick(rank);
  std::vector<float> x(static_cast<size_t>(sh.numel()));
  const float pw[] = {1.0f, -1.0f, 0.5f, 2.0f};
  for (size_t i = 0; i < x.size(); ++i) {
    const uint64_t h = mix(s.key(s.me, 31) + i);
    x[i] = op == kn::ReduceOp::kProd ? pw[h % 4] : static_cast<float>(static_cast<int64_t>(h % 17) - 8);
  }
  // Output shape and the reference, element by element (row-major over the remaining axes).
  kn::Shape ysh;
  std::vector<std::vector<size_t>> groups;
  if (all) {
    ysh.rank = 1;
    ysh.dims[0] = 1;
    groups.emplace_back(x.size());
    for (size_t i = 0; i < x.size(); ++i) groups[0][i] = i;
  } else {
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= dims[i];
    for (int i = axis + 1; i < rank; ++i) inner *= dims[i];
    ysh.rank = rank - 1;
    for (int i = 0, j = 0; i < rank; ++i)
      if (i != axis) ysh.dims[j++] = dims[i];
    if (ysh.rank == 0) ysh.rank = 1, ysh.dims[0] = 1;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        std::vector<size_t> g;
        for (int64_t a = 0; a < dims[axis]; ++a) g.push_back(static_cast<size_t>((o * dims[axis] + a) * inner + in));
        groups.push_back(std::move(g));
      }
  }
  for (const auto& g : groups) {
    if (g.empty() && (op == kn::ReduceOp::kMax || op == kn::ReduceOp::kMin)) return;  // an error by contract
    if (g.size() > 4096 && op == kn::ReduceOp::kProd) return;  // keeps partial products inside f64's range
  }
  std::vector<float> y(groups.size(), NAN);
  const kn::OpOptions opts{.block_num = 1 + r.pick(8), .combine = static_cast<kn::Combine>(r.pick(3))};
  kn::reduce(op, kn::ConstTensor{x.data(), kn::DType::kF32, sh}, kn::Tensor{y.data(), kn::DType::kF32, ysh}, axis, opts);
  for (size_t i = 0; i < groups.size(); ++i) {
    // The result is stored as f32: a product of powers of two beyond its range is inf (or 0) there too.
    const double want = static_cast<float>(ref_reduce(op, x, groups[i]));
    const double tol = op == kn::ReduceOp::kMean ? 1e-6 * std::max(1.0, std::fabs(want)) : 0;
    const bool ok = (std::isnan(want) && std::isnan(y[i])) || y[i] == want || std::fabs(y[i] - want) <= tol;
    if (!ok)
      s.fail((std::string("kernel::reduce ") + kn::reduce_op_name(op) + " " + kn::to_string(sh) + " axis " +
              (all ? "all" : std::to_string(axis)) + " blocks " + std::to_string(opts.block_num)).c_str(),
             "element " + std::to_string(i) + " = " + num(want), num(y[i]));
  }
  s.count(kKernel);
}

void op_softmax(Soak& s, Rng& r) {
  const int64_t rows = 1 + static_cast<int64_t>(r.below(64)), cols = static_cast<int64_t>(r.log_size(1, 4096));
  std::vector<float> x(static_cast<size_t>(rows * cols)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(mix(s.key(s.me, 32) + i) % 2001) - 1000) / 100.0f;
  const bool log = r.coin();
  const kn::OpOptions opts{.block_num = 1 + r.pick(8), .combine = static_cast<kn::Combine>(r.pick(3))};
  const kn::Shape sh{rows, cols};
  (log ? kn::log_softmax : kn::softmax)(kn::ConstTensor{x.data(), kn::DType::kF32, sh}, kn::Tensor{y.data(), kn::DType::kF32, sh}, opts);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x.data() + i * cols;
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, static_cast<double>(row[j]));
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(row[j] - m);
    for (int64_t j = 0; j < cols; ++j) {
      const double want = log ? row[j] - m - std::log(sum) : std::exp(row[j] - m) / sum;
      const double got = y[static_cast<size_t>(i * cols + j)];
      if (std::fabs(got - want) > 1e-5 * std::max(1.0, std::fabs(want)))
        s.fail(log ? "kernel::log_softmax" : "kernel::softmax",
               "element (" + std::to_string(i) + ", " + std::to_string(j) + ") = " + num(want), num(got));
    }
  }
  s.count(kKernel);
}

// coop_put: every PE's kernel puts its pattern to (me + d) mod n, the blocks sharing the transfer and each
// adding its share to the target's signal; the target waits until the signal reaches the whole size.
void coop_put(Soak& s, Rng& g) {
  const int d = s.n == 1 ? 0 : 1 + g.pick(s.n - 1);
  const int target = (s.me + d) % s.n, source = (s.me - d + s.n) % s.n;
  auto plan = [&](int pe, int* blocks) {
    Rng r = s.rng_of(pe);
    *blocks = 1 + r.pick(6);
    return r.log_size(1, Arena::kRmaBytes);
  };
  int blocks, their_blocks;
  const size_t bytes = plan(s.me, &blocks), theirs = plan(source, &their_blocks);
  s.a.sigs[0] = 0;
  std::vector<char> src(bytes), want(theirs);
  fill_pattern(src.data(), bytes, s.key(s.me, 33));
  shmem_barrier_all();
  kn::launch({.block_num = blocks, .name = "soak_coop_put"},
             [&](kn::BlockContext& b) { kn::coop_put(b, s.a.rma_dst, src.data(), bytes, s.a.sigs, target); });
  const uint64_t got = shmem_signal_wait_until(s.a.sigs, SHMEM_CMP_GE, theirs);
  s.check(got == theirs, kKernel, "kernel::coop_put signal", std::to_string(theirs), std::to_string(got));
  fill_pattern(want.data(), theirs, s.key(source, 33));
  s.check_bytes(s.a.rma_dst, want.data(), theirs, kKernel, "kernel::coop_put data");
}

}  // namespace

void step_kernel(Soak& s) {
  Rng g = s.shared();
  g.next();
  Rng r = s.rng_of(s.me);
  switch (g.pick(4)) {
    case 0: raw_sum(s, r); break;
    case 1: op_reduce(s, r); break;
    case 2: op_softmax(s, r); break;
    default: coop_put(s, g);
  }
}

}  // namespace tessera::soak
