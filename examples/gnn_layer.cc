// A GraphSAGE layer's neighbour aggregation with Tessera: an R-MAT power-law graph partitioned across the
// PEs, node features in symmetric memory, and the mean over in-neighbours read straight from the PEs that
// own them (no halo exchange). Prints each PE's share of the graph and the time of one aggregation.
//   build/bin/tessera-run -n 4 build/bin/gnn_layer [scale] [edges] [dim]
#include <shmem.h>
#include <tessera/gnn.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int scale = argc > 1 ? std::atoi(argv[1]) : 16;
  const long long edges = argc > 2 ? std::atoll(argv[2]) : 1 << 20;
  const int dim = argc > 3 ? std::atoi(argv[3]) : 64;
  shmem_init();
  const tessera::gnn::EdgeList g = tessera::gnn::rmat(scale, edges);  // the same list on every PE
  tessera::gnn::Graph graph(g, dim);
  const int64_t lo = graph.first_node(), nl = graph.local_nodes();
  for (int64_t v = 0; v < nl; ++v)
    for (int d = 0; d < dim; ++d) graph.features()[v * dim + d] = std::cos(0.001f * static_cast<float>(lo + v) + d);
  std::vector<float> h(static_cast<size_t>(nl) * dim);
  graph.aggregate(h.data(), tessera::gnn::Aggregation::kMean);  // warm-up: first touch of the pages
  const auto t0 = std::chrono::steady_clock::now();
  graph.aggregate(h.data(), tessera::gnn::Aggregation::kMean);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  double sum = 0;
  for (float v : h) sum += v;
  std::printf("PE %d: nodes %lld..%lld, %lld in-edges, mean aggregation of %d features in %.2f ms (checksum %.4f)\n",
              shmem_my_pe(), static_cast<long long>(lo), static_cast<long long>(lo + nl - 1),
              static_cast<long long>(graph.local_edges()), dim, ms, sum);
  shmem_finalize();
  return 0;
}
