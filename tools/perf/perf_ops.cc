// tessera-perf ops: kernel launch overhead, and per operator / dtype / shape the time, GB/s moved and the
// fraction of this machine's bandwidth bound measured in the same run:
//   read bound  (reductions): a streaming-read kernel of our own over the same number of blocks;
//   copy bound  (operators that write an output as large as the input): memcpy by the same blocks, bytes
//               read + written counted, like the operators' GB/s.
// Times are the best of --iters runs after one warm-up (the machines are shared and noisy; best-of is the
// stable statistic); the median is printed too. Each operator row re-measures its bound in runs interleaved
// with the operator's, so the fraction compares like with like. --json FILE writes the rows for bench/ops_vs_torch.py.
#include <CLI/CLI.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <string>
#include <vector>

#include "base/cpu.h"
#include "kernel/ops/prims.h"
#include "perf/perf.h"
#include "tessera/kernel.hpp"

namespace tessera::perf {
namespace {

namespace k = tessera::kernel;

struct Timing {
  double best_s = 0, median_s = 0;
};

Timing time_it(int iters, const std::function<void()>& f) {
  f();  // warm-up (page faults, pool start)
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const uint64_t t0 = now_ns();
    f();
    t.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Buffer(size_t b) : bytes(b) {
    p = std::aligned_alloc(4096, (b + 4095) / 4096 * 4096);
    if (!p) {
      std::fprintf(stderr, "tessera-perf ops: cannot allocate %zu bytes\n", b);
      std::exit(1);
    }
  }
  ~Buffer() { std::free(p); }
};

// Fills buf with small pseudo-random values of dtype dt in parallel (first touch spread over the blocks).
void fill(Buffer& buf, k::DType dt, int blocks) {
  const size_t n = buf.bytes / k::dtype_size(dt);
  k::launch({.block_num = blocks, .name = "fill"}, [&](k::BlockContext& b) {
    const size_t lo = n * size_t(b.block_idx()) / size_t(b.block_num()), hi = n * size_t(b.block_idx() + 1) / size_t(b.block_num());
    std::vector<float> tmp(4096);
    for (size_t i = lo; i < hi; i += tmp.size()) {
      const size_t m = std::min(tmp.size(), hi - i);
      for (size_t j = 0; j < m; ++j) tmp[j] = static_cast<float>(((i + j) * 2654435761u) % 1000) * 0.004f - 2.f;
      k::ops::prims(dt).from_f32(tmp.data(), static_cast<char*>(buf.p) + i * k::dtype_size(dt), m);
    }
  });
}

// Streaming reads of `bytes` by `blocks` blocks, two ways; the read bound is the faster of the two on this
// machine (as the copy bound is the faster of memcpy and a load/store loop):
//   plain: 8 independent 64-bit accumulators in portable code, vectorised by the compiler as it can;
//   wide:  64-byte (AVX-512) or 32-byte (AVX2) loads into 4 accumulators, with a software prefetch 4 KiB
//          ahead. On Intel hosts a core's read bandwidth is bound by the misses it keeps in flight, and the
//          plain loop reached only 0.55-0.8 of this one (13.7 vs 25.8 GB/s on 2 blocks), so a reduction could
//          show "1.3x the read bound".
uint64_t read_plain(const char* p, size_t bytes) {
  const uint64_t* x = reinterpret_cast<const uint64_t*>(p);
  uint64_t a[8] = {};
  for (size_t i = 0, n = bytes / 8; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) a[j] += x[i + j];
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

__attribute__((target("avx512f"))) uint64_t read_avx512(const char* p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 256 <= bytes; i += 256) {
    _mm_prefetch(p + i + 4096, _MM_HINT_T0);
    _mm_prefetch(p + i + 4096 + 128, _MM_HINT_T0);
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  alignas(64) uint64_t v[8];
  _mm512_store_si512(v, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

__attribute__((target("avx2"))) uint64_t read_avx2(const char* p, size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 128 <= bytes; i += 128) {
    _mm_prefetch(p + i + 4096, _MM_HINT_T0);
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  alignas(32) uint64_t v[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return v[0] + v[1] + v[2] + v[3];
}

enum class Reader { kPlain, kWide };
const char* wide_reader_name() {
  return __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2" : "plain";
}

double read_kernel(const Buffer& buf, int blocks, Reader how) {
  std::vector<uint64_t> sink(static_cast<size_t>(blocks));
  static const auto wide = __builtin_cpu_supports("avx512f") ? read_avx512
                           : __builtin_cpu_supports("avx2")  ? read_avx2
                                                             : read_plain;
  k::launch({.block_num = blocks, .name = "read-bw"}, [&](k::BlockContext& b) {
    // 256-byte aligned slices (the buffer is page-aligned).
    const size_t lo = buf.bytes * size_t(b.block_idx()) / size_t(b.block_num()) / 256 * 256;
    const size_t hi = buf.bytes * size_t(b.block_idx() + 1) / size_t(b.block_num()) / 256 * 256;
    const char* p = static_cast<const char*>(buf.p) + lo;
    sink[size_t(b.block_idx())] = how == Reader::kWide ? wide(p, hi - lo) : read_plain(p, hi - lo);
  });
  return static_cast<double>(sink[0]);
}

// Copy by the blocks: memcpy (glibc picks rep-movsb or non-temporal stores) or a plain load/store loop
// (regular stores); the bound is the faster of the two on this machine.
void copy_kernel(const Buffer& src, Buffer& dst, int blocks, bool use_memcpy) {
  k::launch({.block_num = blocks, .name = "copy-bw"}, [&](k::BlockContext& b) {
    const size_t lo = src.bytes * size_t(b.block_idx()) / size_t(b.block_num()) / 64 * 64;
    const size_t hi = src.bytes * size_t(b.block_idx() + 1) / size_t(b.block_num()) / 64 * 64;
    if (use_memcpy) {
      std::memcpy(static_cast<char*>(dst.p) + lo, static_cast<const char*>(src.p) + lo, hi - lo);
      return;
    }
    const uint64_t* s = reinterpret_cast<const uint64_t*>(static_cast<const char*>(src.p) + lo);
    uint64_t* d = reinterpret_cast<uint64_t*>(static_cast<char*>(dst.p) + lo);
    for (size_t i = 0, n = (hi - lo) / 8; i < n; i += 8)
      for (size_t j = 0; j < 8; ++j) d[i + j] = s[i + j];
  });
}

struct Row {
  std::string op, dtype, shape, bound_kind;
  double elems, bytes;
  Timing t;
  double bound_gbs;
};

// The operators and data types `ops` measures (the rows below use exactly these names).
const std::vector<std::string> kOpNames = {"sum_all",    "sum_rows",    "sum_cols", "max_rows",        "softmax",
                                           "log_softmax", "layer_norm", "rms_norm", "batch_norm_train"};
// In the order of the report; --dtypes takes their names (k::dtype_name: the list's abbreviations).
constexpr k::DType kDtypes[] = {k::DType::kF32, k::DType::kBF16, k::DType::kF16};
const std::vector<std::string> kDtypeNames = [] {
  std::vector<std::string> v;
  for (k::DType t : kDtypes) v.emplace_back(k::dtype_name(t));
  return v;
}();

int run_ops(int argc, char** argv) {
  CLI::App app{"Kernel launch overhead and reduction-operator throughput vs the machine's bandwidth"};
  int blocks = k::default_block_num();
  int iters = 5;
  double mib = 256;
  std::string only, dtypes = "f32,bf16,f16", json;
  app.add_option("-b,--blocks", blocks, "blocks per launch (default: usable CPUs)");
  app.add_option("-i,--iters", iters, "timed runs per row (best and median reported)")->check(CLI::PositiveNumber);
  app.add_option("-m,--mib", mib, "f32 tensor size in MiB for the large shapes (16-bit types: same element count)")
      ->check(CLI::PositiveNumber);
  app.add_option("--only", only, "comma-separated operator names to run (default: all)");
  app.add_option("-t,--dtypes", dtypes, "comma-separated dtypes: f32, bf16, f16");
  app.add_option("--json", json, "also write the rows as JSON lines to this file");
  bool quick = false;
  app.add_flag("--quick", quick, "skip the launch-overhead and whole-run bandwidth sections (rows still carry "
                                 "their own interleaved bound)");
  CLI11_PARSE(app, argc, argv);
  // A name that selects nothing is a mistake, not an empty run.
  for (auto [list, known, what] : {std::tuple{&only, &kOpNames, "--only"}, std::tuple{&dtypes, &kDtypeNames, "--dtypes"}}) {
    std::string rest = *list + ",";
    for (size_t at; !list->empty() && (at = rest.find(',')) != std::string::npos; rest.erase(0, at + 1)) {
      const std::string name = rest.substr(0, at);
      if (std::find(known->begin(), known->end(), name) == known->end()) {
        std::string names;
        for (const std::string& k : *known) names += " " + k;
        std::fprintf(stderr, "tessera-perf ops: %s: unknown name '%s' (known:%s)\n", what, name.c_str(), names.c_str());
        return 2;
      }
    }
  }

  std::printf("# tessera-perf ops: %d blocks, %d CPUs, SIMD target %s, software prefetch %s, best of %d (median in "
              "brackets)\n", blocks, usable_cpus(), k::ops::prims(k::DType::kF32).target,
              k::ops::stream_prefetch() ? "on" : "off", iters);

  // ---- runtime: launch overhead and grid sync latency
  if (!quick) std::printf("#\n# %-28s %12s %12s\n", "runtime", "best(us)", "median(us)");
  for (int nb : {1, 2, 4, 8}) {
    if (quick) break;
    if (nb > std::max(blocks, 2) * 2) break;
    const int reps = 2000;
    Timing t = time_it(iters, [&] {
      for (int r = 0; r < reps; ++r) k::launch({.block_num = nb, .name = "empty"}, [](k::BlockContext&) {});
    });
    std::printf("  launch empty kernel, %d blk  %12.2f %12.2f\n", nb, t.best_s / reps * 1e6, t.median_s / reps * 1e6);
    if (nb == 1) continue;
    Timing s = time_it(iters, [&] {
      k::launch({.block_num = nb, .name = "sync"}, [&](k::BlockContext& b) {
        for (int r = 0; r < reps; ++r) b.sync();
      });
    });
    std::printf("  grid sync, %d blocks           %12.2f %12.2f\n", nb, s.best_s / reps * 1e6, s.median_s / reps * 1e6);
  }

  // ---- machine bandwidth in this run
  const size_t bytes = static_cast<size_t>(mib * 1048576.0) / 4096 * 4096;
  Buffer xb(bytes), yb(bytes);
  fill(xb, k::DType::kF32, blocks);
  fill(yb, k::DType::kF32, blocks);
  const int bw_iters = quick ? 1 : iters;
  Timing tr = time_it(bw_iters, [&] { read_kernel(xb, blocks, Reader::kPlain); });
  Timing tw = time_it(bw_iters, [&] { read_kernel(xb, blocks, Reader::kWide); });
  Timing tm = time_it(bw_iters, [&] { copy_kernel(xb, yb, blocks, true); });
  Timing tl = time_it(bw_iters, [&] { copy_kernel(xb, yb, blocks, false); });
  const double read_gbs = double(bytes) / std::min(tr.best_s, tw.best_s) * 1e-9;
  const Reader reader = tw.best_s <= tr.best_s ? Reader::kWide : Reader::kPlain;
  const double copy_gbs = 2.0 * double(bytes) / std::min(tm.best_s, tl.best_s) * 1e-9;
  const bool copy_memcpy = tm.best_s <= tl.best_s;
  std::printf("#\n# bandwidth (%zu MiB, %d blocks): read %.2f GB/s (%s loads with prefetch %.2f, plain loop %.2f), "
              "copy (read+write counted) %.2f GB/s (memcpy %.2f, load/store loop %.2f)\n", bytes >> 20, blocks,
              read_gbs, wide_reader_name(), double(bytes) / tw.best_s * 1e-9, double(bytes) / tr.best_s * 1e-9,
              copy_gbs, 2.0 * double(bytes) / tm.best_s * 1e-9, 2.0 * double(bytes) / tl.best_s * 1e-9);

  // ---- operators
  const int64_t n_all = int64_t(bytes / 4);
  const int64_t cols = 4096, rows = std::max<int64_t>(1, n_all / cols);
  // BatchNorm: the classic [64, 256, 32, 32] at the default size (a quarter of --mib: a channel of N x 32 x 32
  // elements stays in L2, as in a CNN layer).
  const int64_t bn_n = std::max<int64_t>(1, n_all / (256 * 32 * 32) / 4);
  auto want = [&](const std::string& name) { return only.empty() || ("," + only + ",").find("," + name + ",") != std::string::npos; };
  std::vector<Row> out;
  std::printf("#\n# %-12s %-5s %-18s %10s %10s %8s %9s %10s %8s\n", "op", "dtype", "shape", "time(ms)", "median", "GB/s",
              "Gelem/s", "bound", "frac");
  for (const k::DType dt : kDtypes) {
    const std::string ds = k::dtype_name(dt);
    if (("," + dtypes + ",").find("," + ds + ",") == std::string::npos) continue;
    const double es = double(k::dtype_size(dt));
    fill(xb, dt, blocks);
    const k::OpOptions o{.block_num = blocks};
    auto x = [&](k::Shape s) { return k::ConstTensor{xb.p, dt, s}; };
    auto y = [&](k::Shape s) { return k::Tensor{yb.p, dt, s}; };
    std::vector<float> wv(size_t(cols), 1.1f), bv(size_t(cols), 0.1f), cw(256, 1.f), cb(256, 0.f), rm(256, 0.f), rv(256, 1.f);
    std::vector<float> mean(256), var(256);
    struct Case {
      std::string op;
      k::Shape shape;
      bool writes;  // output as large as the input: copy bound, else read bound
      std::function<void()> run;
    };
    const k::Shape flat{rows * cols}, mat{rows, cols}, bn{bn_n, 256, 32, 32};
    std::vector<Case> cases = {
        {"sum_all", flat, false, [&] { k::reduce(k::ReduceOp::kSum, x(flat), y(k::Shape{}), k::kAllAxes, o); }},
        {"sum_rows", mat, false, [&] { k::reduce(k::ReduceOp::kSum, x(mat), y(k::Shape{rows}), 1, o); }},
        {"sum_cols", mat, false, [&] { k::reduce(k::ReduceOp::kSum, x(mat), y(k::Shape{cols}), 0, o); }},
        {"max_rows", mat, false, [&] { k::reduce(k::ReduceOp::kMax, x(mat), y(k::Shape{rows}), 1, o); }},
        {"softmax", mat, true, [&] { k::softmax(x(mat), y(mat), o); }},
        {"log_softmax", mat, true, [&] { k::log_softmax(x(mat), y(mat), o); }},
        {"layer_norm", mat, true, [&] {
           k::layer_norm(x(mat), y(mat), {.weight = k::ConstTensor{wv.data(), k::DType::kF32, k::Shape{cols}},
                                          .bias = k::ConstTensor{bv.data(), k::DType::kF32, k::Shape{cols}}}, o);
         }},
        {"rms_norm", mat, true, [&] {
           k::rms_norm(x(mat), y(mat), {.weight = k::ConstTensor{wv.data(), k::DType::kF32, k::Shape{cols}}, .bias = {}}, o);
         }},
        {"batch_norm_train", bn, true, [&] {
           k::batch_norm_train(x(bn), y(bn), {.weight = cw.data(), .bias = cb.data(), .running_mean = rm.data(),
                                              .running_var = rv.data()}, mean.data(), var.data(), o);
         }},
    };
    for (Case& c : cases) {
      if (std::find(kOpNames.begin(), kOpNames.end(), c.op) == kOpNames.end())
        std::fprintf(stderr, "tessera-perf ops: row %s is missing from kOpNames\n", c.op.c_str());
      if (!want(c.op)) continue;
      Row r;
      r.op = c.op;
      r.dtype = ds;
      r.shape = k::to_string(c.shape);
      r.elems = double(c.shape.numel());
      r.bytes = r.elems * es * (c.writes ? 2 : 1);
      r.bound_kind = c.writes ? "copy" : "read";
      // The bound is re-measured interleaved with the operator's runs, so machine noise (shared CI hosts)
      // affects both sides of the ratio alike.
      std::vector<double> tb, to;
      c.run();
      for (int it = 0; it < iters; ++it) {
        uint64_t t0 = now_ns();
        if (c.writes) copy_kernel(xb, yb, blocks, copy_memcpy);
        else read_kernel(xb, blocks, reader);
        tb.push_back(double(now_ns() - t0) * 1e-9);
        t0 = now_ns();
        c.run();
        to.push_back(double(now_ns() - t0) * 1e-9);
      }
      std::sort(tb.begin(), tb.end());
      std::sort(to.begin(), to.end());
      r.t = {to.front(), to[to.size() / 2]};
      r.bound_gbs = double(bytes) * (c.writes ? 2.0 : 1.0) / tb.front() * 1e-9;
      const double gbs = r.bytes / r.t.best_s * 1e-9;
      std::printf("  %-12s %-5s %-18s %10.2f %10.2f %8.2f %9.3f %5s %4.1f %8.2f\n", r.op.c_str(), ds.c_str(), r.shape.c_str(),
                  r.t.best_s * 1e3, r.t.median_s * 1e3, gbs, r.elems / r.t.best_s * 1e-9, r.bound_kind.c_str(),
                  r.bound_gbs, gbs / r.bound_gbs);
      out.push_back(r);
    }
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "tessera-perf ops: cannot write %s\n", json.c_str());
      return 1;
    }
    std::fprintf(f, "{\"kind\":\"bandwidth\",\"blocks\":%d,\"read_gbs\":%.4f,\"copy_gbs\":%.4f}\n", blocks, read_gbs, copy_gbs);
    for (const Row& r : out)
      std::fprintf(f, "{\"kind\":\"op\",\"op\":\"%s\",\"dtype\":\"%s\",\"shape\":\"%s\",\"best_s\":%.6e,\"median_s\":%.6e,"
                   "\"bytes\":%.0f,\"elems\":%.0f,\"bound\":\"%s\",\"bound_gbs\":%.4f}\n",
                   r.op.c_str(), r.dtype.c_str(), r.shape.c_str(), r.t.best_s, r.t.median_s, r.bytes, r.elems,
                   r.bound_kind.c_str(), r.bound_gbs);
    std::fclose(f);
  }
  return 0;
}

}  // namespace

static const Registrar kReg{"ops", "kernel launch overhead; reduce/softmax/norm operators vs memory bandwidth", &run_ops};

}  // namespace tessera::perf
