// Tessera's MoE dispatch + combine (tessera/moe.hpp), timed the way bench/moe/moe_mpi.c and moe_gloo.py time
// the same routing with MPI_Alltoallv and gloo's all_to_all_single (bench/moe/moe_compare.sh runs all three).
// Routing, identical in the three: expert of (pe, t, k) = (pe*31 + t*17 + k) % E, weight (k+1)/8, element h
// of token t on PE p = ((p*5 + t*3 + h) % 9) - 4; the "expert" scales its rows by 1 << (e % 4) (not timed).
// Capacity is the largest number of tokens any expert receives under this routing, so nothing is dropped
// (the peers never drop either). Timed: dispatch + combine; the median over iterations of the slowest
// PE's time. One JSON line per run on PE 0; the result of the last iteration is checked on every token.
//   tessera-run -n N bench_moe_tessera T H K E f32|bf16 throughput|low_latency ITERS [gemm|gemm-early]
// gemm: each expert also multiplies its rows (as f32) by an H x H matrix with OpenBLAS (a layer's worth of
// compute; its product is left unused, the scaled rows stay the output), and the time is the whole step,
// dispatch + experts + combine, with the experts' own time beside it ("compute_us"); gemm-early sends each
// expert's rows home as soon as it is done (Dispatcher::combine_expert), so the network carries them while
// the next expert computes. bench/moe/moe_mpi.c takes the same gemm.
#include <shmem.h>
#include <tessera/moe.hpp>

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
float to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s T H K E f32|bf16 throughput|low_latency ITERS\n", argv[0]);
    return 2;
  }
  const int T = std::atoi(argv[1]), H = std::atoi(argv[2]), K = std::atoi(argv[3]), E = std::atoi(argv[4]);
  const bool bf16 = std::string(argv[5]) == "bf16";
  const bool ll = std::string(argv[6]) == "low_latency";
  const int iters = std::atoi(argv[7]);
  const std::string work = argc > 8 ? argv[8] : "";
  if (!work.empty() && work != "gemm" && work != "gemm-early") {
    std::fprintf(stderr, "bench_moe_tessera: the 8th argument is gemm or gemm-early, not %s\n", work.c_str());
    return 2;
  }
  const bool gemm = !work.empty(), early = work == "gemm-early";
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  auto expert = [&](int pe, int t, int k) { return (pe * 31 + t * 17 + k) % E; };
  // The largest load of any expert under this routing.
  std::vector<int> load(static_cast<size_t>(E));
  for (int pe = 0; pe < n; ++pe)
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < K && k < E; ++k) ++load[expert(pe, t, k)];
  tessera::moe::Config cfg;
  cfg.num_experts = E;
  cfg.hidden = H;
  cfg.dtype = bf16 ? tessera::moe::DType::kBFloat16 : tessera::moe::DType::kFloat32;
  cfg.top_k = K;
  cfg.max_tokens = std::max(1, T);
  cfg.capacity = std::max(1, *std::max_element(load.begin(), load.end()));
  cfg.mode = ll ? tessera::moe::Mode::kLowLatency : tessera::moe::Mode::kThroughput;
  tessera::moe::Dispatcher d(cfg);
  const size_t esz = bf16 ? 2 : 4;
  std::vector<char> x(static_cast<size_t>(T) * H * esz), y(x.size());
  std::vector<int32_t> ids(static_cast<size_t>(T) * K);
  std::vector<float> w(ids.size());
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      const float v = static_cast<float>((me * 5 + t * 3 + h) % 9) - 4.0f;
      if (bf16) reinterpret_cast<uint16_t*>(x.data())[static_cast<size_t>(t) * H + h] = to_bf16(v);
      else reinterpret_cast<float*>(x.data())[static_cast<size_t>(t) * H + h] = v;
    }
    for (int k = 0; k < K; ++k) {
      ids[t * K + k] = k < E ? expert(me, t, k) : -1;
      w[t * K + k] = static_cast<float>(k + 1) / 8.0f;
    }
  }
  double* times = static_cast<double*>(shmem_calloc(2, sizeof(double)));
  std::vector<double> per_iter, compute;
  // gemm: the layer's weight, and its input and product for the largest expert.
  std::vector<float> wgt(gemm ? static_cast<size_t>(H) * H : 0), a, c;
  for (size_t i = 0; i < wgt.size(); ++i) wgt[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 64.0f;
  const int warm = std::max(2, iters / 5);
  for (int i = 0; i < warm + iters; ++i) {
    shmem_barrier_all();
    const double t0 = now();
    d.dispatch(x.data(), T, ids.data(), w.data());
    double expert_time = now();
    for (int le = 0; le < d.local_experts(); ++le) {
      const float s = static_cast<float>(1 << ((d.first_expert() + le) % 4));
      char* rows = static_cast<char*>(d.expert_tokens(le));
      const size_t cnt = static_cast<size_t>(d.count(le)) * H;
      if (gemm && cnt) {
        a.resize(std::max(a.size(), cnt));
        c.resize(std::max(c.size(), cnt));
        for (size_t j = 0; j < cnt; ++j)
          a[j] = bf16 ? to_float(reinterpret_cast<uint16_t*>(rows)[j]) : reinterpret_cast<float*>(rows)[j];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.count(le), H, H, 1.0f, a.data(), H, wgt.data(), H,
                    0.0f, c.data(), H);
      }
      if (bf16) {
        uint16_t* r = reinterpret_cast<uint16_t*>(rows);
        for (size_t j = 0; j < cnt; ++j) r[j] = to_bf16(to_float(r[j]) * s);
      } else {
        float* r = reinterpret_cast<float*>(rows);
        for (size_t j = 0; j < cnt; ++j) r[j] *= s;
      }
      if (early) d.combine_expert(le);
    }
    expert_time = now() - expert_time;
    d.combine(y.data());
    times[0] = now() - t0 - (gemm ? 0.0 : expert_time);
    if (i >= warm) compute.push_back(expert_time);
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, times + 1, times, 1);
    if (i >= warm) per_iter.push_back(times[1]);
  }
  // Check every token of the last iteration.
  long bad = 0;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      float want = 0;
      const float v = static_cast<float>((me * 5 + t * 3 + h) % 9) - 4.0f;
      for (int k = 0; k < K && k < E; ++k) want += w[t * K + k] * static_cast<float>(1 << (ids[t * K + k] % 4)) * v;
      const size_t j = static_cast<size_t>(t) * H + h;
      const float got = bf16 ? to_float(reinterpret_cast<uint16_t*>(y.data())[j]) : reinterpret_cast<float*>(y.data())[j];
      if (std::fabs(got - want) > (bf16 ? 0.02f * std::fabs(want) + 0.01f : 1e-4f)) ++bad;
    }
  if (bad) std::fprintf(stderr, "PE %d: %ld wrong elements\n", me, bad);
  std::sort(per_iter.begin(), per_iter.end());
  std::sort(compute.begin(), compute.end());
  if (me == 0)
    std::printf("{\"impl\":\"tessera\",\"mode\":\"%s\",\"ranks\":%d,\"tokens\":%d,\"hidden\":%d,\"dtype\":\"%s\",\"top_k\":%d,"
                "\"experts\":%d,\"us\":%.2f,\"dropped\":%zu,\"work\":\"%s\",\"compute_us\":%.2f}\n",
                ll ? "low_latency" : "throughput", n, T, H, bf16 ? "bf16" : "f32", K, E,
                per_iter[per_iter.size() / 2] * 1e6, d.dropped(), gemm ? work.c_str() : "scale",
                compute[compute.size() / 2] * 1e6);
  shmem_free(times);
  shmem_finalize();
  return bad ? 1 : 0;
}
