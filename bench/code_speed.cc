// How fast the codes of the phase between hosts run (coll/hier/compress.h), against one reduction pass
// (y = x + y through the engine's kernels) over the same values: the cost model prices coding as multiples
// of that pass (hier/rows.cc: code_cost), and this prints the multiples measured here beside the rates.
// One thread, float32 values drawn from a normal distribution, encode with error feedback (as the
// collectives call it), decode adding into a sum.  usage: bench_code_speed [MIB (64)] [ROUNDS (7)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "coll/hier/compress.h"
#include "coll/reduce/reduce.h"

namespace tc = tessera::coll;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <typename F>
double best_of(int rounds, F&& f) {  // the fastest round: the machine's rate without its interruptions
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (mib < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: %s [MIB >= 1] [ROUNDS >= 1]\n", argv[0]);
    return 2;
  }
  const size_t n = (mib << 20) / sizeof(float);
  std::vector<float> x(n), y(n, 0.0f), r(n, 0.0f);
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 1e-3f);
  for (float& v : x) v = dist(gen);
  const void* srcs[2] = {x.data(), y.data()};
  const double pass = best_of(rounds, [&] { tc::reduce(y.data(), srcs, 2, n, tc::DType::kFloat32, tc::Op::kSum); });
  std::printf("{\"what\":\"reduction pass\",\"mib\":%zu,\"seconds\":%.6f,\"gb_per_s\":%.2f}\n", mib, pass,
              static_cast<double>(n * sizeof(float)) / pass / 1e9);
  for (tc::Compress c : {tc::Compress::kBf16, tc::Compress::kFp8, tc::Compress::kInt8}) {
    std::vector<char> code(tc::encoded_bytes(c, n));
    const double enc = best_of(rounds, [&] { tc::encode(c, x.data(), r.data(), n, code.data()); });
    const double dec = best_of(rounds, [&] { tc::decode(c, code.data(), n, y.data(), true); });
    std::printf("{\"code\":\"%s\",\"encode_gb_per_s\":%.2f,\"decode_gb_per_s\":%.2f,\"encode_passes\":%.2f,"
                "\"decode_passes\":%.2f}\n",
                tc::compress_name(c), static_cast<double>(n * sizeof(float)) / enc / 1e9,
                static_cast<double>(n * sizeof(float)) / dec / 1e9, enc / pass, dec / pass);
  }
  return 0;
}
