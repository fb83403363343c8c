// Tessera's GNN aggregation (tessera/gnn.hpp), timed the way bench/gnn/gnn_mpi.c and gnn_gloo.py time the same
// layer with a halo exchange (MPI_Alltoallv, gloo's all_to_all_single); bench/gnn/gnn_compare.sh runs all
// three. Same R-MAT graph (tessera::gnn::rmat, a=0.57 b=0.19 c=0.19), same partition (contiguous node ranges),
// features x[u][d] = ((u*7 + d*3) % 11 - 5) / 4, GraphSAGE mean over in-edges. Timed: one aggregate() (its
// barriers included), the median over iterations of the slowest PE's time; setup (generation, CSR) is not
// timed, as the peers' setup is not. Every owned node's result is checked against a direct computation.
//   tessera-run -n N bench_gnn_tessera SCALE EDGES DIM ITERS [SEED]
#include <shmem.h>
#include <tessera/gnn.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s SCALE EDGES DIM ITERS [SEED]\n", argv[0]);
    return 2;
  }
  const int scale = std::atoi(argv[1]), D = std::atoi(argv[3]), iters = std::atoi(argv[4]);
  const int64_t E = std::atoll(argv[2]);
  const uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const tessera::gnn::EdgeList g = tessera::gnn::rmat(scale, E, seed);
  // GNN_EDGE_CHECKSUM=K: the generator's check against the peers' (gnn_mpi.c prints the same line).
  if (const char* ck = std::getenv("GNN_EDGE_CHECKSUM"); ck && me == 0) {
    const int64_t K = std::min<int64_t>(std::atoll(ck), E);
    uint64_t h = 0;
    for (int64_t i = 0; i < K; ++i)
      h += static_cast<uint64_t>(i + 1) * static_cast<uint64_t>(g.src[i] * g.num_nodes + g.dst[i]);
    std::fprintf(stderr, "edge_checksum K=%lld %llu\n", static_cast<long long>(K), static_cast<unsigned long long>(h));
  }
  tessera::gnn::Graph graph(g, D);
  const int64_t lo = graph.first_node(), nl = graph.local_nodes();
  auto x = [](int64_t u, int d) { return static_cast<float>((u * 7 + d * 3) % 11 - 5) / 4.0f; };
  for (int64_t v = 0; v < nl; ++v)
    for (int d = 0; d < D; ++d) graph.features()[v * D + d] = x(lo + v, d);
  std::vector<float> out(static_cast<size_t>(nl) * D);
  double* t = static_cast<double*>(shmem_calloc(2, sizeof(double)));
  std::vector<double> per;
  const int warm = iters / 4 + 1;  // as the peers
  for (int i = 0; i < warm + iters; ++i) {
    shmem_barrier_all();
    const auto t0 = std::chrono::steady_clock::now();
    graph.aggregate(out.data(), tessera::gnn::Aggregation::kMean);
    t[0] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, t + 1, t, 1);
    if (i >= warm) per.push_back(t[1]);
  }
  // Check: sums in edge-list order, as the library adds them.
  std::vector<float> want(out.size(), 0.0f);
  std::vector<int64_t> deg(static_cast<size_t>(nl), 0);
  for (size_t i = 0; i < g.src.size(); ++i) {
    const int64_t v = g.dst[i];
    if (v < lo || v >= lo + nl) continue;
    ++deg[v - lo];
    for (int d = 0; d < D; ++d) want[(v - lo) * D + d] += x(g.src[i], d);
  }
  long bad = 0;
  for (int64_t v = 0; v < nl; ++v)
    for (int d = 0; d < D; ++d) {
      const float w = deg[v] ? want[v * D + d] * (1.0f / static_cast<float>(deg[v])) : 0.0f;
      if (std::fabs(out[v * D + d] - w) > 1e-4f * (1.0f + std::fabs(w))) ++bad;
    }
  if (bad) std::fprintf(stderr, "PE %d: %ld wrong elements\n", me, bad);
  long* fetched = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  fetched[0] = static_cast<long>(graph.remote_rows_fetched());
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, fetched + 1, fetched, 1);
  std::sort(per.begin(), per.end());
  const size_t h = per.size() / 2;
  const double median = per.size() % 2 ? per[h] : (per[h - 1] + per[h]) / 2;  // as the peers
  if (me == 0)
    std::printf("{\"impl\":\"tessera\",\"ranks\":%d,\"scale\":%d,\"edges\":%lld,\"dim\":%d,\"us\":%.1f,\"rows_fetched\":%ld}\n", n,
                scale, static_cast<long long>(E), D, median * 1e6, fetched[1]);
  shmem_free(fetched);
  shmem_free(t);
  shmem_finalize();
  return bad ? 1 : 0;
}
