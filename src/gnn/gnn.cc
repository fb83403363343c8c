// GNN neighbour aggregation over a partitioned graph (tessera/gnn.hpp).
//
// Features live in one symmetric allocation of max_local rows per PE, so node u's row is at the same offset
// (u - first[owner]) * dim in its owner's heap whatever the owner: a peer of this host reads it in place
// through pgas::remote(), without staging (this is what replaces the halo exchange); a peer of another
// host has no mapping, so its rows are fetched with non-blocking gets into a local cache, each distinct row
// once per call, before the sums. The cache's slots are assigned at construction (the nodes are known
// then), so a call only issues the gets.
#include <tessera/gnn.hpp>

#include <tessera/kernel.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "pgas/barrier.h"
#include "pgas/heap.h"
#include "pgas/order.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"

namespace tessera::gnn {
namespace {
constexpr const char* kRoutine = "tessera::gnn";

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
std::string str(long long v) { return std::to_string(v); }
}  // namespace

EdgeList rmat(int scale, int64_t edges, uint64_t seed, double a, double b, double c) {
  if (scale < 1 || scale > 40) throw Error("tessera::gnn::rmat: scale is " + str(scale) + "; it must be 1..40");
  if (edges < 0) throw Error("tessera::gnn::rmat: edges is " + str(edges) + "; it must not be negative");
  if (a < 0 || b < 0 || c < 0 || a + b + c > 1)
    throw Error("tessera::gnn::rmat: probabilities a, b, c must be non-negative with a sum of at most 1");
  EdgeList g;
  g.num_nodes = int64_t{1} << scale;
  g.src.resize(static_cast<size_t>(edges));
  g.dst.resize(static_cast<size_t>(edges));
  const uint64_t base = seed * 0x100000001B3ull;
  for (int64_t i = 0; i < edges; ++i) {
    int64_t s = 0, d = 0;
    for (int l = 0; l < scale; ++l) {
      const double u = static_cast<double>(splitmix64(base + static_cast<uint64_t>(i) * 64 + static_cast<uint64_t>(l)) >> 11) *
                       0x1.0p-53;
      const int64_t bit = int64_t{1} << (scale - 1 - l);
      if (u < a) {
      } else if (u < a + b) {
        d |= bit;
      } else if (u < a + b + c) {
        s |= bit;
      } else {
        s |= bit;
        d |= bit;
      }
    }
    g.src[static_cast<size_t>(i)] = s;
    g.dst[static_cast<size_t>(i)] = d;
  }
  return g;
}

EdgeList read_edge_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("tessera::gnn::read_edge_list: cannot open " + path);
  EdgeList g;
  std::string line;
  long long lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    size_t i = line.find_first_not_of(" \t\r");
    if (i == std::string::npos || line[i] == '#' || line[i] == '%') continue;
    std::istringstream ss(line);
    long long s = -1, d = -1;
    std::string rest;
    if (!(ss >> s >> d) || s < 0 || d < 0 || (ss >> rest && rest[0] != '#'))
      throw Error("tessera::gnn::read_edge_list: " + path + ":" + str(lineno) + ": expected two node ids (>= 0), got \"" +
                  line.substr(0, 80) + "\"");
    g.src.push_back(s);
    g.dst.push_back(d);
    g.num_nodes = std::max<int64_t>(g.num_nodes, std::max(s, d) + 1);
  }
  return g;
}

struct Graph::Impl {
  int n = 0, me = 0, dim = 0, block_num = -1;
  int64_t N = 0;
  std::vector<int64_t> first;        // first[p]: PE p's first node; first[n] = N
  std::vector<int64_t> offsets;      // CSR of in-edges of owned nodes (local index)
  std::vector<int64_t> sources;      // global source ids, edge-list order
  std::vector<int32_t> indeg_all;    // in-degree of every node (GCN needs its sources')
  float* feat = nullptr;             // symmetric, max_local rows
  int64_t max_local = 0;
  // Rows of other hosts: cache slot per source node, and the gets to fill it.
  std::unordered_map<int64_t, int64_t> slot_of;
  std::vector<int64_t> fetch_nodes;
  std::vector<float> cache;
  size_t fetched = 0;
  // Each in-edge's source row, resolved once: the mappings and the cache do not move after construction.
  std::vector<const float*> edge_rows;

  int owner(int64_t u) const {
    return static_cast<int>(std::upper_bound(first.begin(), first.end(), u) - first.begin()) - 1;
  }
  // u's row: in place (this PE or a peer of this host) or in the cache (another host).
  const float* row(int64_t u) const {
    const int p = owner(u);
    if (p == me) return feat + (u - first[me]) * dim;
    const float* sym = feat + (u - first[p]) * dim;
    if (const char* r = pgas::remote(kRoutine, sym, sizeof(float) * static_cast<size_t>(dim), p))
      return reinterpret_cast<const float*>(r);
    return cache.data() + slot_of.at(u) * dim;
  }
};

Graph::Graph(const EdgeList& g, int dim, int block_num) : p_(std::make_unique<Impl>()) {
  Impl& m = *p_;
  if (!pgas::is_initialized()) throw Error("tessera::gnn::Graph: call shmem_init first");
  if (dim < 1) throw Error("tessera::gnn::Graph: dim is " + str(dim) + "; it must be at least 1");
  if (g.src.size() != g.dst.size())
    throw Error("tessera::gnn::Graph: the edge list has " + str(static_cast<long long>(g.src.size())) + " sources but " +
                str(static_cast<long long>(g.dst.size())) + " destinations");
  m.n = pgas::rt().n_pes;
  m.me = pgas::rt().my_pe;
  m.dim = dim;
  m.block_num = block_num;
  m.N = g.num_nodes;
  for (size_t i = 0; i < g.src.size(); ++i)
    if (g.src[i] < 0 || g.src[i] >= m.N || g.dst[i] < 0 || g.dst[i] >= m.N)
      throw Error("tessera::gnn::Graph: edge " + str(static_cast<long long>(i)) + " (" + str(g.src[i]) + " -> " +
                  str(g.dst[i]) + ") names a node out of range: the graph has " + str(m.N) + " nodes");
  m.first.resize(static_cast<size_t>(m.n) + 1);
  for (int p = 0; p <= m.n; ++p)
    m.first[p] = static_cast<int64_t>(static_cast<__int128>(m.N) * p / m.n);
  for (int p = 0; p < m.n; ++p) m.max_local = std::max(m.max_local, m.first[p + 1] - m.first[p]);
  const int64_t lo = m.first[m.me], nl = m.first[m.me + 1] - lo;
  m.indeg_all.assign(static_cast<size_t>(m.N), 0);
  m.offsets.assign(static_cast<size_t>(nl) + 1, 0);
  for (size_t i = 0; i < g.dst.size(); ++i) {
    ++m.indeg_all[static_cast<size_t>(g.dst[i])];
    if (g.dst[i] >= lo && g.dst[i] < lo + nl) ++m.offsets[static_cast<size_t>(g.dst[i] - lo) + 1];
  }
  for (int64_t v = 0; v < nl; ++v) m.offsets[v + 1] += m.offsets[v];
  m.sources.resize(static_cast<size_t>(m.offsets[nl]));
  std::vector<int64_t> at(m.offsets.begin(), m.offsets.end() - 1);
  for (size_t i = 0; i < g.dst.size(); ++i)
    if (g.dst[i] >= lo && g.dst[i] < lo + nl) m.sources[static_cast<size_t>(at[g.dst[i] - lo]++)] = g.src[i];
  void* f = pgas::sym_calloc(static_cast<size_t>(std::max<int64_t>(1, m.max_local)), sizeof(float) * static_cast<size_t>(dim),
                             kRoutine);
  if (!f)
    throw Error("tessera::gnn::Graph: the symmetric heap has no room for " + str(m.max_local) + " rows of " + str(dim) +
                " floats (raise SHMEM_SYMMETRIC_SIZE)");
  m.feat = static_cast<float*>(f);
  // Sources on other hosts: one cache slot each.
  for (int64_t u : m.sources) {
    const int p = m.owner(u);
    if (p == m.me || m.slot_of.count(u)) continue;
    if (pgas::remote(kRoutine, m.feat + (u - m.first[p]) * dim, sizeof(float), p)) continue;
    m.slot_of.emplace(u, static_cast<int64_t>(m.fetch_nodes.size()));
    m.fetch_nodes.push_back(u);
  }
  m.cache.resize(m.fetch_nodes.size() * static_cast<size_t>(dim));
  m.edge_rows.reserve(m.sources.size());
  for (int64_t u : m.sources) m.edge_rows.push_back(m.row(u));
}

Graph::~Graph() {
  if (pgas::is_initialized()) pgas::sym_free(p_->feat, kRoutine);
}

int64_t Graph::num_nodes() const { return p_->N; }
int64_t Graph::first_node() const { return p_->first[p_->me]; }
int64_t Graph::local_nodes() const { return p_->first[p_->me + 1] - p_->first[p_->me]; }
int Graph::dim() const { return p_->dim; }
int64_t Graph::local_edges() const { return static_cast<int64_t>(p_->sources.size()); }
float* Graph::features() { return p_->feat; }
size_t Graph::remote_rows_fetched() const { return p_->fetched; }

void Graph::aggregate(float* out, Aggregation agg) {
  Impl& m = *p_;
  const int64_t nl = local_nodes(), lo = first_node();
  const int D = m.dim;
  if (nl && !out) throw Error("tessera::gnn::aggregate: out is null with " + str(nl) + " local nodes");
  if (static_cast<unsigned>(agg) > static_cast<unsigned>(Aggregation::kGcn))
    throw Error("tessera::gnn::aggregate: aggregation " + str(static_cast<int>(agg)) + " is not kSum, kMean or kGcn");
  pgas::barrier_all_internal();  // every PE's features are in place
  for (size_t i = 0; i < m.fetch_nodes.size(); ++i) {
    const int64_t u = m.fetch_nodes[i];
    const int p = m.owner(u);
    pgas::get_nbi_bytes(kRoutine, m.cache.data() + i * D, m.feat + (u - m.first[p]) * D, sizeof(float) * D, p);
  }
  pgas::quiet();
  m.fetched = m.fetch_nodes.size();
  kernel::LaunchOptions o;
  o.block_num = m.block_num;
  o.name = "gnn aggregate";
  kernel::launch(o, [&](kernel::BlockContext& b) {
    const int64_t vlo = nl * b.block_idx() / b.block_num(), vhi = nl * (b.block_idx() + 1) / b.block_num();
    for (int64_t v = vlo; v < vhi; ++v) {
      float* acc = out + v * D;
      const int64_t e0 = m.offsets[v], e1 = m.offsets[v + 1];
      const float dv = static_cast<float>(m.indeg_all[lo + v]);
      if (agg == Aggregation::kGcn) {
        const float self = 1.0f / (dv + 1.0f);
        const float* x = m.feat + v * D;
        for (int d = 0; d < D; ++d) acc[d] = self * x[d];
      } else {
        std::fill(acc, acc + D, 0.0f);
      }
      for (int64_t e = e0; e < e1; ++e) {
        const float* x = m.edge_rows[e];
        if (agg == Aggregation::kGcn) {
          const float w = 1.0f / std::sqrt((static_cast<float>(m.indeg_all[m.sources[e]]) + 1.0f) * (dv + 1.0f));
          for (int d = 0; d < D; ++d) acc[d] += w * x[d];
        } else {
          for (int d = 0; d < D; ++d) acc[d] += x[d];
        }
      }
      if (agg == Aggregation::kMean && e1 > e0) {
        const float inv = 1.0f / static_cast<float>(e1 - e0);
        for (int d = 0; d < D; ++d) acc[d] *= inv;
      }
    }
  });
  pgas::barrier_all_internal();  // nobody rewrites its features while others read them
}

}  // namespace tessera::gnn
