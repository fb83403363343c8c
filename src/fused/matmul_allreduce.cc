// Fused MatMul + AllReduce (tessera/fused.hpp), on the collective engine.
//
// The product is computed in slabs of columns (all rows), so B is read once per call, into a symmetric
// buffer laid out slab by slab: slab i (columns [c, c + w)) is a contiguous rows x w block, so that it is one
// buffer to the engine. Each slab is reduced by the engine (an allreduce in place; a reduce-scatter of the
// slab with `MatMulReduceScatter`) and copied into C's columns.
// - Within a host the reduction is memory traffic on the same CPUs as the product, so the two alternate on
//   the calling thread: product of slab 0; then for each slab i, product of slab i+1, then slab i's
//   reduction. A reduction follows its slab's product by one slab, which keeps the slab recent in cache, and
//   a PE computes the next slab while a slower peer catches up.
// - When the op's PEs span hosts, a reduction is mostly waiting for the network, so it runs on a stream of
//   the op's own (its thread sleeps in those waits) while the calling thread computes the next slabs; the
//   call ends when the last reduction has. The slabs are then narrower (up to kNetSlabs), since only the
//   first product and the last reduction are not overlapped.
// The engine call is an OpenSHMEM-style one (Args::symmetric): within a host its rows read and write the
// members' slabs in place, with no staging copy; across hosts it runs the rows across hosts, priced by the
// same cost model as every other collective. It returns only once no member touches this PE's slab any more,
// so the next slab's or the next call's product may overwrite it without a barrier.
// The op has a communicator of its own over all PEs (made and freed collectively with the op), so its calls
// never interleave with other collectives' sequence; across hosts only the op's stream calls it.
#include <tessera/fused.hpp>
#include <tessera/stream.hpp>

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/memcopy.h"
#include "coll/comm.h"
#include "coll/dispatch.h"
#include "pgas/amo.h"
#include "pgas/barrier.h"
#include "pgas/heap.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"
#include "pgas/team.h"

namespace tessera::fused {
namespace {
constexpr const char* kRoutine = "tessera::fused::MatMulAllReduce";
std::string str(long long v) { return std::to_string(v); }
// PE p's share of m rows: [row_lo(m, p, n), row_lo(m, p + 1, n)), the split every op here uses.
int row_lo(int m, int p, int n) { return static_cast<int>(static_cast<int64_t>(m) * p / n); }
// Slabs of a call across hosts (at least 64 columns each): with S slabs the product and the reductions
// overlap but for one slab's product and one slab's reduction, while each slab's GEMM reads A again.
constexpr int kNetSlabs = 8;
}  // namespace

struct MatMulAllReduce::Impl {
  int n_pes = 0, me = 0, max_m = 0, n = 0, tile = 0, fixed_tile = 0;
  // Columns per slab for a call of m rows. Each slab's GEMM reads the whole of A again, so slabs cost m*k
  // reads each: as many as B is larger than A (n/m), from 2 (to pipeline at all) to 8, and 64 columns at
  // least; a fixed width when the constructor was given one. And at most as many as PEs: pipelining hides
  // at most the reduction, which reads m*n per PE, while S slabs read A S - 1 more times, (S - 1)*m*k, so
  // slabs stop paying at S = n/k, which is the number of PEs in the tensor-parallel layout (k = n / PEs).
  // k itself may differ between PEs, and the tiling must not.
  int slab(int m) const {
    if (fixed_tile) return fixed_tile;
    const int slabs = net ? kNetSlabs : std::min(std::clamp(n / std::max(1, m), 2, 8), std::max(2, n_pes));
    return std::min(n, std::max(64, (n + slabs - 1) / slabs));
  }
  float* partial = nullptr;  // max_m x n: this PE's product, slab by slab
  float* mine = nullptr;     // this PE's reduced rows of one slab (MatMulReduceScatter)
  coll::Communicator* comm = nullptr;
  std::unique_ptr<Stream> net;  // across hosts: where the reductions run (the op's communicator is its own)
  std::vector<size_t> counts;  // per PE: elements of its rows of the slab (reduce-scatter)

  // One engine call over the op's communicator; an error (a mismatch the engine reports) is thrown.
  void run_coll(coll::Kind kind, const coll::Args& args) {
    coll::Args a = args;
    a.symmetric = true;
    comm->caller = kRoutine;
    const Status st = coll::dispatch(*comm, kind, a);
    comm->caller = nullptr;
    if (!st.is_ok()) throw Error(st.message());
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
  m.max_m = max_m;
  m.n = n;
  m.fixed_tile = tile_cols ? std::min(tile_cols, n) : 0;
  m.counts.resize(static_cast<size_t>(m.n_pes));
  const size_t elems = static_cast<size_t>(max_m) * n;
  const size_t my_elems = static_cast<size_t>((max_m + m.n_pes - 1) / m.n_pes) * n;
  auto alloc = [&](size_t bytes) {
    void* p = pgas::sym_calloc(1, bytes, kRoutine);
    if (!p) throw Error(std::string(kRoutine) + ": the symmetric heap has no room for " + str(static_cast<long long>(bytes)) +
                        " bytes (raise SHMEM_SYMMETRIC_SIZE or lower max_m)");
    return p;
  };
  m.partial = static_cast<float*>(alloc(elems * sizeof(float)));
  m.mine = static_cast<float*>(alloc(my_elems * sizeof(float)));
  Result<coll::Communicator*> c = coll::comm_create_team(pgas::team_world());
  if (!c.is_ok()) throw Error(std::string(kRoutine) + ": cannot make its communicator: " + c.status().message());
  m.comm = c.value();
  if (m.comm->hier) m.net = std::make_unique<Stream>("fused reductions");
}

MatMulAllReduce::~MatMulAllReduce() {
  p_->net.reset();  // waits for its queue (empty between calls), then ends the thread
  if (!pgas::is_initialized()) return;
  coll::comm_destroy(p_->comm);
  pgas::sym_free(p_->mine, kRoutine);
  pgas::sym_free(p_->partial, kRoutine);
}

int MatMulAllReduce::tile_cols(int m) const { return p_->slab(m); }

void MatMulAllReduce::run(const float* A, const float* B, float* C, int rows, int k) { run_rows(A, B, C, rows, k, false); }

// scatter: C holds only this PE's rows [r0, r1), reduce-scattered into `mine` slab by slab.
void MatMulAllReduce::run_rows(const float* A, const float* B, float* C, int rows, int k, bool scatter) {
  Impl& m = *p_;
  if (rows < 0 || rows > m.max_m)
    throw Error(std::string(kRoutine) + "::run: m is " + str(rows) + "; it must be 0.." + str(m.max_m) + " (max_m)");
  if (k < 0) throw Error(std::string(kRoutine) + "::run: k is " + str(k) + "; it must not be negative");
  const bool has_rows = row_lo(rows, m.me + 1, m.n_pes) > row_lo(rows, m.me, m.n_pes);
  if (rows && ((!C && (!scatter || has_rows)) || (k && (!A || !B)))) throw Error(std::string(kRoutine) + "::run: a null matrix with m " + str(rows) + ", k " + str(k));
  m.tile = m.slab(rows);
  const int n = m.n, tiles = (n + m.tile - 1) / m.tile;
  if (rows == 0) return;  // every PE passes the same m: nothing to compute or to reduce anywhere
  auto width = [&](int i) { return std::min(m.tile, n - i * m.tile); };
  auto slab_of = [&](int i) { return m.partial + static_cast<size_t>(rows) * static_cast<size_t>(i) * m.tile; };
  auto product = [&](int i) {
    const int c = i * m.tile, w = width(i);
    float* dst = slab_of(i);
    if (k == 0) std::memset(dst, 0, static_cast<size_t>(rows) * w * sizeof(float));
    else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, w, k, 1.0f, A, k, B + c, n, 0.0f, dst, w);
  };
  // My share of every slab in the scatter form: rows [r0, r1).
  const int r0 = row_lo(rows, m.me, m.n_pes), r1 = row_lo(rows, m.me + 1, m.n_pes);
  auto reduce = [&](int i) {
    const size_t c = static_cast<size_t>(i) * m.tile, w = static_cast<size_t>(width(i));
    float* slab = slab_of(i);
    if (!scatter) {
      m.run_coll(coll::Kind::kAllreduce, {.send = slab, .recv = slab, .count = static_cast<size_t>(rows) * w});
      for (int row = 0; row < rows; ++row)
        memcopy(C + static_cast<size_t>(row) * n + c, slab + static_cast<size_t>(row) * w, w * sizeof(float));
      return;
    }
    for (int p = 0; p < m.n_pes; ++p)
      m.counts[static_cast<size_t>(p)] =
          static_cast<size_t>(row_lo(rows, p + 1, m.n_pes) - row_lo(rows, p, m.n_pes)) * w;
    coll::Args a{.send = slab, .recv = m.mine, .count = m.counts[static_cast<size_t>(m.me)]};
    a.rcounts = m.counts.data();
    m.run_coll(coll::Kind::kReduceScatterv, a);
    for (int j = 0; j < r1 - r0; ++j)
      memcopy(C + static_cast<size_t>(j) * n + c, m.mine + static_cast<size_t>(j) * w, w * sizeof(float));
  };
  if (tiles) product(0);
  if (!m.net) {
    for (int i = 0; i < tiles; ++i) {
      if (i + 1 < tiles) product(i + 1);
      reduce(i);
    }
    return;
  }
  // Slab i's reduction is enqueued before slab i+1's product starts; reductions and products touch different
  // slabs, and the reductions write disjoint columns of C. The stream's items refer to this frame, which
  // synchronize() keeps alive until all of them have run.
  for (int i = 0; i < tiles; ++i) {
    m.net->enqueue(kRoutine, [&reduce, i] { reduce(i); });
    if (i + 1 < tiles) product(i + 1);
  }
  try {
    m.net->synchronize();
  } catch (const Error&) {
    m.net = std::make_unique<Stream>("fused reductions");  // a failed item makes a stream's error sticky
    throw;
  }
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
