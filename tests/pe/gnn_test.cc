// GNN aggregation (tessera/gnn.hpp) against a single-process reference every PE computes from the whole
// edge list: sum, mean and GCN, on R-MAT graphs and small hand-made ones (node counts that do not divide
// the PEs, PEs that own no node, no edges at all), two layers in a row, and the edge-list reader's errors.
// Under pe/as_hosts.sh the rows of other hosts come by get; the test checks how many were fetched.
#include <tessera/gnn.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "pe_main.h"

namespace {
using namespace tessera::gnn;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

float feature(int64_t u, int d) { return static_cast<float>((u * 7 + d * 3) % 11 - 5) / 4.0f; }

// out[v] for v owned here, from the whole edge list and the features in `x` (a function of the node).
template <typename X>
std::vector<float> reference(const EdgeList& g, int64_t lo, int64_t hi, int D, Aggregation agg, X&& x) {
  std::vector<int64_t> indeg(static_cast<size_t>(g.num_nodes));
  for (int64_t v : g.dst) ++indeg[static_cast<size_t>(v)];
  std::vector<float> out(static_cast<size_t>(hi - lo) * D, 0.0f);
  if (agg == Aggregation::kGcn)
    for (int64_t v = lo; v < hi; ++v)
      for (int d = 0; d < D; ++d) out[(v - lo) * D + d] = x(v, d) / (static_cast<float>(indeg[v]) + 1.0f);
  for (size_t i = 0; i < g.src.size(); ++i) {
    const int64_t u = g.src[i], v = g.dst[i];
    if (v < lo || v >= hi) continue;
    const float w = agg == Aggregation::kGcn
                        ? 1.0f / std::sqrt((static_cast<float>(indeg[u]) + 1.0f) * (static_cast<float>(indeg[v]) + 1.0f))
                        : 1.0f;
    for (int d = 0; d < D; ++d) out[(v - lo) * D + d] += w * x(u, d);
  }
  if (agg == Aggregation::kMean)
    for (int64_t v = lo; v < hi; ++v)
      if (indeg[v])
        for (int d = 0; d < D; ++d) out[(v - lo) * D + d] *= 1.0f / static_cast<float>(indeg[v]);
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << what << " element " << i;
}

// Two layers: aggregate the formula features, then aggregate that output again.
void check_graph(const EdgeList& g, int D) {
  Graph graph(g, D, 2);
  const int64_t lo = graph.first_node(), nl = graph.local_nodes();
  ASSERT_EQ(graph.num_nodes(), g.num_nodes);
  for (Aggregation agg : {Aggregation::kSum, Aggregation::kMean, Aggregation::kGcn}) {
    for (int64_t v = 0; v < nl; ++v)
      for (int d = 0; d < D; ++d) graph.features()[v * D + d] = feature(lo + v, d);
    std::vector<float> out(static_cast<size_t>(nl) * D);
    graph.aggregate(out.data(), agg);
    const auto want = reference(g, lo, lo + nl, D, agg, feature);
    expect_near(out, want, "layer 1");
    // Layer 2 needs every node's layer-1 output: each PE computes it for all nodes from the reference.
    const auto all1 = reference(g, 0, g.num_nodes, D, agg, feature);
    for (int64_t v = 0; v < nl; ++v)
      for (int d = 0; d < D; ++d) graph.features()[v * D + d] = out[v * D + d];
    graph.aggregate(out.data(), agg);
    expect_near(out, reference(g, lo, lo + nl, D, agg, [&](int64_t u, int d) { return all1[u * D + d]; }), "layer 2");
  }
  // Rows of other hosts are fetched once per distinct node; none when every PE shares this host. Whether an
  // owner is on another host: shmem_ptr is null for exactly those PEs (the specification's rule), on hosts
  // made by pe/as_hosts.sh and on real (namespace) hosts alike.
  std::set<int64_t> other_host;
  const int n = npes();
  for (size_t i = 0; i < g.src.size(); ++i) {
    const int64_t v = g.dst[i], u = g.src[i];
    if (v < lo || v >= lo + nl) continue;
    int owner = 0;
    while (static_cast<int64_t>(static_cast<__int128>(g.num_nodes) * (owner + 1) / n) <= u) ++owner;
    if (!shmem_ptr(graph.features(), owner)) other_host.insert(u);
  }
  EXPECT_EQ(graph.remote_rows_fetched(), other_host.size());
}

TEST(Rmat, SameOnEveryPeAndSkewed) {
  const EdgeList g = rmat(12, 1 << 16, 7);
  ASSERT_EQ(g.num_nodes, 4096);
  ASSERT_EQ(g.src.size(), size_t{1} << 16);
  uint64_t h = 1469598103934665603ull;
  std::vector<int64_t> indeg(4096);
  for (size_t i = 0; i < g.src.size(); ++i) {
    ASSERT_TRUE(g.src[i] >= 0 && g.src[i] < 4096 && g.dst[i] >= 0 && g.dst[i] < 4096);
    h = (h ^ static_cast<uint64_t>(g.src[i] * 4096 + g.dst[i])) * 1099511628211ull;
    ++indeg[g.dst[i]];
  }
  // Power law: the busiest node has far more in-edges than the mean of 16.
  EXPECT_GT(*std::max_element(indeg.begin(), indeg.end()), 16 * 10);
  // Every PE generated the same list.
  uint64_t* sym = static_cast<uint64_t*>(shmem_calloc(4, sizeof(uint64_t)));
  sym[0] = h;
  sym[1] = ~h;
  shmem_uint64_max_reduce(SHMEM_TEAM_WORLD, sym + 2, sym, 2);
  EXPECT_EQ(sym[2], h);
  EXPECT_EQ(sym[3], ~h);
  shmem_free(sym);
  // Another seed, another graph.
  EXPECT_NE(rmat(12, 1 << 16, 8).src, g.src);
}

TEST(Graph, RmatAllAggregations) { check_graph(rmat(10, 8192, 3), 16); }
TEST(Graph, NodesThatDoNotDivideThePes) {
  EdgeList g;
  g.num_nodes = 37;
  for (int i = 0; i < 200; ++i) {
    g.src.push_back((i * 13) % 37);
    g.dst.push_back((i * 7 + i / 5) % 37);
  }
  check_graph(g, 5);
}
TEST(Graph, FewerNodesThanPesAndNoEdges) {
  EdgeList g;
  g.num_nodes = 2;  // with 3 or 4 PEs some own nothing
  g.src = {0, 1, 1};
  g.dst = {1, 0, 1};
  check_graph(g, 3);
  EdgeList empty;
  empty.num_nodes = 9;
  check_graph(empty, 4);
}

TEST(EdgeListFile, ReadsCommentsAndReportsBadLines) {
  const std::string path = "/tmp/tessera_gnn_test_" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream f(path);
    f << "# a comment\n% another\n0 1\n  2\t1\n\n1 3 # trailing comment\n";
  }
  const EdgeList g = read_edge_list(path);
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.src, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(g.dst, (std::vector<int64_t>{1, 1, 3}));
  {
    std::ofstream f(path);
    f << "0 1\n1 x\n";
  }
  try {
    read_edge_list(path);
    ADD_FAILURE() << "a malformed line was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(read_edge_list(path), Error);  // gone
}

TEST(Graph, BadInputThrows) {
  EdgeList g;
  g.num_nodes = 4;
  g.src = {0, 5};
  g.dst = {1, 2};
  try {
    Graph bad(g, 4);
    ADD_FAILURE() << "node 5 of 4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  g.src = {0, 1};
  EXPECT_THROW(Graph(g, 0), Error);
  EXPECT_THROW(rmat(0, 10), Error);
}
}  // namespace
