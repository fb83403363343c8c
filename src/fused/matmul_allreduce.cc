// Fused MatMul + AllReduce (tessera/fused.hpp).
//
// Symmetric memory per PE: partial[max_m][n] (this PE's product), reduced[max_m][n] (the rows this PE
// reduces, in place), and two flag arrays of max_tiles x n_pes words, tagged with the
// call number so they never need clearing: ready[i][p] (PE p's partial tile i is written) and done[i][p]
// (PE p's slice of tile i is reduced). A PE announces its own progress by setting its word in every PE's
// array (a store plus a wake-up there), so each PE waits only on its own memory.
// Tiles are slabs of columns (all rows), so B is read once per call. The pipeline, per PE: product of tile
// 0; then for each tile i: product of tile i+1, announce it, reduce my share of rows of tile i (waiting for
// every PE's ready[i]), announce done[i]. A reduction thus follows its tile's product by one tile, which
// keeps the tile recent in cache, and every PE keeps computing while the slowest peer catches up. Finally
// each PE copies every other PE's reduced rows into C (waiting for their done flags), and a barrier ends
// the call, so the next call cannot overwrite a tile still being read.
// PEs of this host are read in place through the shared mapping. A PE on another host is read with gets:
// its rows of a tile with one blocked get into a private buffer before they are summed, its reduced rows
// with one get into C; the flags are remote atomics there, and its waits are woken by the transport.
#include <tessera/fused.hpp>

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/memcopy.h"
#include "pgas/amo.h"
#include "pgas/barrier.h"
#include "pgas/heap.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"

namespace tessera::fused {
namespace {
constexpr const char* kRoutine = "tessera::fused::MatMulAllReduce";
std::string str(long long v) { return std::to_string(v); }
// PE p's share of m rows: [row_lo(m, p, n), row_lo(m, p + 1, n)), the split every op here uses.
int row_lo(int m, int p, int n) { return static_cast<int>(static_cast<int64_t>(m) * p / n); }
}  // namespace

struct MatMulAllReduce::Impl {
  int n_pes = 0, me = 0, max_m = 0, n = 0, tile = 0, fixed_tile = 0, max_tiles = 0;
  // Columns per slab for a call of m rows. Each slab's GEMM reads the whole of A again, so slabs cost m*k
  // reads each: as many as B is larger than A (n/m), from 2 (to pipeline at all) to 8, and 64 columns at
  // least; a fixed width when the constructor was given one. And at most as many as PEs: pipelining hides
  // at most the reduction, which reads m*n per PE, while S slabs read A S - 1 more times, (S - 1)*m*k, so
  // slabs stop paying at S = n/k, which is the number of PEs in the tensor-parallel layout (k = n / PEs).
  // k itself may differ between PEs, and the tiling must not.
  int slab(int m) const {
    if (fixed_tile) return fixed_tile;
    const int slabs = std::min(std::clamp(n / std::max(1, m), 2, 8), std::max(2, n_pes));
    return std::min(n, std::max(64, (n + slabs - 1) / slabs));
  }
  float* partial = nullptr;
  float* reduced = nullptr;
  uint64_t* ready = nullptr;
  uint64_t* done = nullptr;
  uint64_t calls = 0;
  std::vector<std::vector<float>> fetched;  // per PE: its rows of a tile, when it is on another host

  const float* peer(const float* sym, int p, size_t elems) const {
    return reinterpret_cast<const float*>(pgas::remote(kRoutine, sym, elems * sizeof(float), p));
  }
  // PE p's rows [r0, r1) of columns [c, c + w) of `sym` (row stride n), and the stride to step by: in place
  // through the mapping of a PE of this host; from another host, fetched into fetched[p] (stride w).
  std::pair<const float*, size_t> rows_of(const float* sym, int p, int r0, int r1, size_t c, size_t w) {
    const size_t nr = static_cast<size_t>(r1 - r0), first = static_cast<size_t>(r0) * n + c;
    if (const float* q = peer(sym + first, p, (nr - 1) * n + w)) return {q, static_cast<size_t>(n)};
    std::vector<float>& buf = fetched[static_cast<size_t>(p)];
    buf.resize(nr * w);
    pgas::ibget_bytes(kRoutine, buf.data(), sym + first, static_cast<ptrdiff_t>(w), n, w, nr, sizeof(float), p);
    return {buf.data(), w};
  }
  // Sets my word of flag array `f` for tile i on every PE.
  void announce(uint64_t* f, int i) {
    for (int p = 0; p < n_pes; ++p)
      pgas::atomic_set<uint64_t>(kRoutine, f + static_cast<size_t>(i) * n_pes + me, calls, p);
  }
  void wait_all(uint64_t* f, int i, const char* what) {
    for (int p = 0; p < n_pes; ++p)
      pgas::wait_until(what, f + static_cast<size_t>(i) * n_pes + p, pgas::kGe, calls);
  }
};

MatMulAllReduce::MatMulAllReduce(int max_m, int n, int tile_cols) : p_(std::make_unique<Impl>()) {
  Impl& m = *p_;
  if (!pgas::is_initialized()) throw Error(std::string(kRoutine) + ": call shmem_init first");
  if (max_m < 1) throw Error(std::string(kRoutine) + ": max_m is " + str(max_m) + "; it must be at least 1");
  if (n < 1) throw Error(std::string(kRoutine) + ": n is " + str(n) + "; it must be at least 1");
  if (tile_cols < 0) throw Error(std::string(kRoutine) + ": tile_cols is " + str(tile_cols) + "; it must be 0 (automatic) or more");
  m.n_pes = pgas::rt().n_pes;
  m.me = pgas::rt().my_pe;
  m.fetched.resize(static_cast<size_t>(m.n_pes));
  m.max_m = max_m;
  m.n = n;
  m.fixed_tile = tile_cols ? std::min(tile_cols, n) : 0;
  m.max_tiles = m.fixed_tile ? (n + m.fixed_tile - 1) / m.fixed_tile : (n + 63) / 64;
  const size_t elems = static_cast<size_t>(max_m) * n;
  auto alloc = [&](size_t bytes) {
    void* p = pgas::sym_calloc(1, bytes, kRoutine);
    if (!p) throw Error(std::string(kRoutine) + ": the symmetric heap has no room for " + str(static_cast<long long>(bytes)) +
                        " bytes (raise SHMEM_SYMMETRIC_SIZE or lower max_m)");
    return p;
  };
  m.partial = static_cast<float*>(alloc(elems * sizeof(float)));
  m.reduced = static_cast<float*>(alloc(elems * sizeof(float)));
  m.ready = static_cast<uint64_t*>(alloc(static_cast<size_t>(m.max_tiles) * m.n_pes * sizeof(uint64_t)));
  m.done = static_cast<uint64_t*>(alloc(static_cast<size_t>(m.max_tiles) * m.n_pes * sizeof(uint64_t)));
}

MatMulAllReduce::~MatMulAllReduce() {
  if (!pgas::is_initialized()) return;
  for (void* p : {static_cast<void*>(p_->done), static_cast<void*>(p_->ready), static_cast<void*>(p_->reduced),
                  static_cast<void*>(p_->partial)})
    pgas::sym_free(p, kRoutine);
}

int MatMulAllReduce::tile_cols(int m) const { return p_->slab(m); }

void MatMulAllReduce::run(const float* A, const float* B, float* C, int rows, int k) { run_rows(A, B, C, rows, k, false); }

// scatter: C holds only this PE's rows [r0, r1), reduced straight into it; no reduced buffer, no gather.
void MatMulAllReduce::run_rows(const float* A, const float* B, float* C, int rows, int k, bool scatter) {
  Impl& m = *p_;
  if (rows < 0 || rows > m.max_m)
    throw Error(std::string(kRoutine) + "::run: m is " + str(rows) + "; it must be 0.." + str(m.max_m) + " (max_m)");
  if (k < 0) throw Error(std::string(kRoutine) + "::run: k is " + str(k) + "; it must not be negative");
  const bool has_rows = row_lo(rows, m.me + 1, m.n_pes) > row_lo(rows, m.me, m.n_pes);
  if (rows && ((!C && (!scatter || has_rows)) || (k && (!A || !B)))) throw Error(std::string(kRoutine) + "::run: a null matrix with m " + str(rows) + ", k " + str(k));
  m.tile = m.slab(rows);
  const int n = m.n, tiles = (n + m.tile - 1) / m.tile;
  if (rows == 0) {
    pgas::barrier_all_internal();
    return;
  }
  ++m.calls;
  // Tile i: the columns [i*tile, i*tile + w) of C, for all rows: the whole of A with one slab of B, so B is
  // read once per call (row tiles would stream all of B once per tile).
  auto width = [&](int i) { return std::min(m.tile, n - i * m.tile); };
  auto product = [&](int i) {
    const int c = i * m.tile, w = width(i);
    float* dst = m.partial + c;
    if (k == 0) {
      for (int row = 0; row < rows; ++row) std::memset(dst + static_cast<size_t>(row) * n, 0, static_cast<size_t>(w) * sizeof(float));
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, w, k, 1.0f, A, k, B + c, n, 0.0f, dst, n);
    }
    m.announce(m.ready, i);
  };
  // My share of every tile: rows [r0, r1).
  const int r0 = row_lo(rows, m.me, m.n_pes), r1 = row_lo(rows, m.me + 1, m.n_pes);
  std::vector<std::pair<const float*, size_t>> in(static_cast<size_t>(m.n_pes));
  auto reduce = [&](int i) {
    m.wait_all(m.ready, i, "tessera::fused::MatMulAllReduce (every PE's product of a tile)");
    const size_t c = static_cast<size_t>(i) * m.tile, w = static_cast<size_t>(width(i));
    if (r1 > r0)
      for (int p = 0; p < m.n_pes; ++p) in[static_cast<size_t>(p)] = m.rows_of(m.partial, p, r0, r1, c, w);
    for (int row = r0; row < r1; ++row) {
      const size_t at = static_cast<size_t>(row) * n + c, j0 = static_cast<size_t>(row - r0);
      float* out = scatter ? C + j0 * n + c : m.reduced + at;
      memcopy(out, in[0].first + j0 * in[0].second, w * sizeof(float));
      for (int p = 1; p < m.n_pes; ++p) {
        const float* from = in[static_cast<size_t>(p)].first + j0 * in[static_cast<size_t>(p)].second;
        for (size_t j = 0; j < w; ++j) out[j] += from[j];
      }
    }
    if (!scatter) m.announce(m.done, i);
  };
  if (tiles) product(0);
  for (int i = 0; i < tiles; ++i) {
    if (i + 1 < tiles) product(i + 1);
    reduce(i);
  }
  if (scatter) {
    pgas::barrier_all_internal();  // nobody overwrites a tile another PE may still be reading
    return;
  }
  // Every PE's reduced rows into C: once all tiles are reduced, each PE's rows are whole rows of C.
  for (int i = 0; i < tiles; ++i) m.wait_all(m.done, i, "tessera::fused::MatMulAllReduce (every PE's reduced share of a tile)");
  for (int p = 0; p < m.n_pes; ++p) {
    const int a = row_lo(rows, p, m.n_pes), b = row_lo(rows, p + 1, m.n_pes);
    const size_t at = static_cast<size_t>(a) * n, len = static_cast<size_t>(b - a) * n;
    if (!len) continue;
    if (const float* from = m.peer(m.reduced + at, p, len)) memcopy(C + at, from, len * sizeof(float));
    else pgas::get_bytes(kRoutine, C + at, m.reduced + at, len * sizeof(float), p);
  }
  pgas::barrier_all_internal();  // nobody overwrites a tile another PE may still be reading
}


// ---- MatMul + ReduceScatter ----

MatMulReduceScatter::MatMulReduceScatter(int max_m, int n, int tile_cols) : op_(max_m, n, tile_cols) {}
void MatMulReduceScatter::run(const float* A, const float* B, float* C_rows, int m, int k) {
  op_.run_rows(A, B, C_rows, m, k, true);
}
int MatMulReduceScatter::first_row(int m) const {
  return row_lo(m, pgas::rt().my_pe, pgas::rt().n_pes);
}
int MatMulReduceScatter::rows(int m) const {
  return row_lo(m, pgas::rt().my_pe + 1, pgas::rt().n_pes) - first_row(m);
}

// ---- AllGather + MatMul ----
// Each PE's rows of X are copied once into symmetric memory (xs) and announced; the product then takes the
// slices in the order me, me+1, ...: a slice of another PE of this host is multiplied straight from its
// mapping (the "gather" is the GEMM's own reads), so the next slice is fetched while the current one is
// multiplied without any staging copy. A slice of a PE on another host is fetched with one get into a
// private buffer first. A barrier ends the call before xs may be rewritten.

struct AllGatherMatMul::Impl {
  int n_pes = 0, me = 0, max_m = 0, k = 0, max_rows = 0;
  float* xs = nullptr;
  uint64_t* ready = nullptr;  // ready[p]: PE p's rows are in its xs (call number)
  uint64_t calls = 0;
  std::vector<float> fetched;  // a slice of a PE on another host
};

AllGatherMatMul::AllGatherMatMul(int max_m, int k) : p_(std::make_unique<Impl>()) {
  Impl& m = *p_;
  static constexpr const char* kName = "tessera::fused::AllGatherMatMul";
  if (!pgas::is_initialized()) throw Error(std::string(kName) + ": call shmem_init first");
  if (max_m < 1) throw Error(std::string(kName) + ": max_m is " + str(max_m) + "; it must be at least 1");
  if (k < 1) throw Error(std::string(kName) + ": k is " + str(k) + "; it must be at least 1");
  m.n_pes = pgas::rt().n_pes;
  m.me = pgas::rt().my_pe;
  m.max_m = max_m;
  m.k = k;
  m.max_rows = (max_m + m.n_pes - 1) / m.n_pes;
  m.xs = static_cast<float*>(pgas::sym_calloc(static_cast<size_t>(m.max_rows) * k, sizeof(float), kName));
  m.ready = static_cast<uint64_t*>(pgas::sym_calloc(static_cast<size_t>(m.n_pes), sizeof(uint64_t), kName));
  if (!m.xs || !m.ready)
    throw Error(std::string(kName) + ": the symmetric heap has no room for " + str(m.max_rows) + " rows of " + str(k) +
                " floats (raise SHMEM_SYMMETRIC_SIZE)");
}

AllGatherMatMul::~AllGatherMatMul() {
  if (!pgas::is_initialized()) return;
  pgas::sym_free(p_->ready, "tessera::fused::AllGatherMatMul");
  pgas::sym_free(p_->xs, "tessera::fused::AllGatherMatMul");
}

void AllGatherMatMul::run(const float* X_rows, const float* W, float* Y, int rows, int n) {
  Impl& m = *p_;
  static constexpr const char* kName = "tessera::fused::AllGatherMatMul::run";
  auto lo = [&](int p) { return row_lo(rows, p, m.n_pes); };
  if (rows < 0 || rows > m.max_m)
    throw Error(std::string(kName) + ": m is " + str(rows) + "; it must be 0.." + str(m.max_m) + " (max_m)");
  if (n < 0) throw Error(std::string(kName) + ": n is " + str(n) + "; it must not be negative");
  const int mine = lo(m.me + 1) - lo(m.me);
  if ((mine && !X_rows) || (rows && n && (!W || !Y)))
    throw Error(std::string(kName) + ": a null matrix with m " + str(rows) + ", n " + str(n));
  ++m.calls;
  if (mine) memcopy(m.xs, X_rows, static_cast<size_t>(mine) * m.k * sizeof(float));
  for (int p = 0; p < m.n_pes; ++p) pgas::atomic_set<uint64_t>(kName, m.ready + m.me, m.calls, p);
  for (int s = 0; s < m.n_pes; ++s) {
    const int p = (m.me + s) % m.n_pes, r = lo(p + 1) - lo(p);
    pgas::wait_until("tessera::fused::AllGatherMatMul (a PE's rows of X)", m.ready + p, pgas::kGe, m.calls);
    if (!r || !n) continue;
    const size_t bytes = static_cast<size_t>(r) * m.k * sizeof(float);
    const float* x = reinterpret_cast<const float*>(pgas::remote(kName, m.xs, bytes, p));
    if (!x) {
      m.fetched.resize(static_cast<size_t>(r) * m.k);
      pgas::get_bytes(kName, m.fetched.data(), m.xs, bytes, p);
      x = m.fetched.data();
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, n, m.k, 1.0f, x, m.k, W, n, 0.0f,
                Y + static_cast<size_t>(lo(p)) * n, n);
  }
  pgas::barrier_all_internal();  // nobody rewrites its rows while another PE still multiplies them
}

int AllGatherMatMul::first_row(int m) const {
  return row_lo(m, p_->me, p_->n_pes);
}
int AllGatherMatMul::rows(int m) const {
  return row_lo(m, p_->me + 1, p_->n_pes) - first_row(m);
}

}  // namespace tessera::fused
