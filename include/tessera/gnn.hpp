// Tessera graph neural network aggregation: a graph partitioned across PEs, node features in symmetric
// memory, and one GCN / GraphSAGE layer's neighbour aggregation that reads the rows of other PEs directly
// (loads on this host, gets from other hosts), instead of a halo exchange.
//
//   tessera::gnn::EdgeList g = tessera::gnn::rmat(20, 16 << 20);      // the same on every PE (seeded)
//   tessera::gnn::Graph graph(g, /*dim=*/128);                        // collective
//   fill(graph.features(), graph.local_nodes(), 128);                 // this PE's rows
//   graph.aggregate(out, tessera::gnn::Aggregation::kMean);           // collective
//
// Contracts
// - Nodes are partitioned in contiguous ranges: PE p owns [p*N/n, (p+1)*N/n). Edges are directed (src -> dst);
//   aggregation at v runs over its in-edges u -> v, duplicates counted, self loops included.
// - Every PE builds its Graph from the same edge list (rmat is deterministic for its seed); each keeps the
//   in-edges of its own nodes in CSR form, in edge-list order.
// - aggregate() is collective: it starts when every PE's features are in place (a barrier), reads, and ends
//   with a barrier, so features() may be rewritten afterwards. Arithmetic in f32, in edge order:
//     kSum   out[v] = sum_u x[u]
//     kMean  out[v] = sum_u x[u] / indeg(v)             (0 when v has no in-edges; GraphSAGE's mean)
//     kGcn   out[v] = x[v] / (indeg(v)+1) + sum_u x[u] / sqrt((indeg(u)+1) (indeg(v)+1))   (GCN with self loops)
// - Rows of PEs on this host are read in place through the shared mapping. Rows of other hosts are fetched
//   once per call into a local cache (each distinct row once, however many edges use it), so a hot node costs
//   one get, not one per edge; remote_rows_fetched() says how many were.
// - Bad input (a node id out of range, a dim of 0, an unreadable or malformed edge-list file) throws
//   tessera::Error naming the value, the limit or the line.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <tessera/error.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::gnn {

using Error = tessera::Error;

struct EdgeList {
  int64_t num_nodes = 0;
  std::vector<int64_t> src, dst;
};

/// R-MAT power-law graph: 2^scale nodes, `edges` edges. Edge i, level l draws
/// u = (splitmix64(seed * 0x100000001B3 + i * 64 + l) >> 11) * 2^-53 and picks the quadrant (a, b, c, rest) that
/// gives bit scale-1-l of (src, dst). Deterministic: every PE (and bench/gnn's peers) get the same list.
EdgeList rmat(int scale, int64_t edges, uint64_t seed = 1, double a = 0.57, double b = 0.19, double c = 0.19);
/// "src dst" per line (whitespace separated; lines starting with # or % are comments); num_nodes is the
/// largest id + 1.
EdgeList read_edge_list(const std::string& path);

enum class Aggregation : uint8_t { kSum, kMean, kGcn };

class Graph {
 public:
  Graph(const EdgeList& g, int dim, int block_num = -1);  // collective over all PEs
  ~Graph();                                              // collective over all PEs
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  int64_t num_nodes() const;
  int64_t first_node() const;   // this PE's first node
  int64_t local_nodes() const;  // how many it owns
  int dim() const;
  int64_t local_edges() const;  // in-edges of its nodes
  float* features();            // its rows, [local_nodes, dim], symmetric
  void aggregate(float* out, Aggregation agg);  // out: [local_nodes, dim]
  size_t remote_rows_fetched() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace tessera::gnn
