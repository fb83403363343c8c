// Mixture-of-experts dispatch and combine (tessera/moe.hpp).
//
// Symmetric memory per PE (sizes from the Config, the same on every PE):
//   throughput  recv[local expert][capacity] rows, meta[local expert][capacity] (origin PE, token, k),
//               cnt[2][local expert] slot counters (two sets, used by alternate calls)
//   low latency recv[local expert][source PE][max_tokens] rows and meta, sig[local expert][source PE]
//   both        comb[max_tokens][top_k] rows (outputs coming home), the dispatch and combine counters
// Throughput dispatch: each kernel block claims a run of slots per expert with one
// fetch_add(cnt[call parity][expert], rows) at the expert's PE and puts its rows and their origins there; a
// slot past capacity is a drop, known to the sender at once. Every PE
// then adds 1 to every PE's dispatch counter (after a fence), so a PE whose counter reaches n_pes * calls
// has all its rows, reads its counts and clears its counter set. Clearing set p after call i is safe: a
// peer claims in set p again only in call i+2, after it has seen this PE's signal of call i+1, which this
// PE sends only after the clear.
// Low-latency dispatch: a source numbers its own rows per expert (no atomics), puts them in its region at
// the expert's PE, then sets one signal word per expert there to (call << 32 | count): the count arrives
// with the data. The expert's PE waits for every source's word of this call and packs the rows per expert.
// That is for PEs on several hosts, where a fetch-and-add is a network round trip. When every PE shares
// this host a fetch-and-add is a cache-line transfer, and low-latency mode claims its slots as throughput
// mode does, with a capacity of every source's region (PEs x max_tokens rows per expert, which a source
// whose tokens name distinct experts cannot exceed): rows land in their final slots and are not packed
// (docs/moe.md, measured).
// Combine: every received row goes back to comb[token][k] at its origin, then the same counter scheme; the
// origin sums its rows with its weights.
// Across hosts (PEs on more than one host) a transfer to another host is a network message, so rows travel
// in runs, never one by one: a source stages the rows of each run of slots it claimed (throughput) or of
// each expert (low latency) and puts the run whole; low latency's counts go to each PE in one put with one
// signal (not a remote atomic per expert). Going home, an expert's PE sends each origin its rows in one
// order both sides know without metadata (local expert, then slot), into a range of the origin's comb that
// the origin announced at dispatch (ret_off), so consecutive rows for one origin are one put; the origin
// then finds row (t, k) at the position it computed for it (pos). That way home is home.cc; the Dispatcher's
// state and the helpers both files use are impl.h.
#include <tessera/moe.hpp>

#include <tessera/kernel.hpp>

#include <algorithm>
#include <climits>
#include <atomic>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"
#include "base/memcopy.h"
#include "kernel/dtype.h"
#include "kernel/ops/prims.h"
#include "moe/impl.h"
#include "pgas/amo.h"
#include "pgas/heap.h"
#include "pgas/order.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"

namespace tessera::moe {
using namespace detail;

Dispatcher::Dispatcher(const Config& c) : p_(std::make_unique<Impl>()) {
  Impl& m = *p_;
  if (!pgas::is_initialized()) throw Error("tessera::moe::Dispatcher: call shmem_init first");
  m.cfg = c;
  m.n = pgas::rt().n_pes;
  m.me = pgas::rt().my_pe;
  if (c.num_experts < 1) throw Error("tessera::moe::Dispatcher: num_experts is " + str(c.num_experts) + "; it must be at least 1");
  if (c.hidden < 1) throw Error("tessera::moe::Dispatcher: hidden is " + str(c.hidden) + "; it must be at least 1");
  if (c.top_k < 1 || c.top_k > kMaxTopK)
    throw Error("tessera::moe::Dispatcher: top_k is " + str(c.top_k) + "; it must be 1.." + str(kMaxTopK));
  if (c.max_tokens < 1 || c.max_tokens >= (1 << 30))
    throw Error("tessera::moe::Dispatcher: max_tokens is " + str(c.max_tokens) + "; it must be 1.." + str((1 << 30) - 1));
  if (c.capacity < 0) throw Error("tessera::moe::Dispatcher: capacity is " + str(c.capacity) + "; it must be 0 (automatic) or more");
  if (static_cast<unsigned>(c.dtype) >= std::size(kEntries))
    throw Error("tessera::moe::Dispatcher: dtype " + str(static_cast<int>(c.dtype)) + " is not f32 or bf16");
  m.esz = ::tessera::dtype_size(kEntries[static_cast<int>(c.dtype)]);
  m.row = static_cast<size_t>(c.hidden) * m.esz;
  m.first.resize(static_cast<size_t>(m.n) + 1);
  for (int p = 0; p <= m.n; ++p) m.first[p] = static_cast<int>(static_cast<int64_t>(p) * c.num_experts / m.n);
  m.owner.resize(static_cast<size_t>(c.num_experts));
  for (int p = 0; p < m.n; ++p) {
    for (int e = m.first[p]; e < m.first[p + 1]; ++e) m.owner[e] = p;
    m.max_local = std::max(m.max_local, m.first[p + 1] - m.first[p]);
  }
  const int64_t share = (2ll * c.max_tokens * c.top_k * m.n + c.num_experts - 1) / c.num_experts;
  if (c.mode == Mode::kThroughput)
    m.cap = c.capacity ? c.capacity : static_cast<int>(std::min<int64_t>(share, int64_t{c.max_tokens} * m.n));
  else if (const int64_t regions = int64_t{m.n} * c.max_tokens; regions <= INT32_MAX)
    m.cap = static_cast<int>(regions);  // every source's region
  else
    throw Error("tessera::moe::Dispatcher: max_tokens " + str(c.max_tokens) + " x " + str(m.n) + " PEs is " +
                str(regions) + " rows per expert in low-latency mode; the limit is " + str(INT32_MAX));
  const pgas::Runtime& rt = pgas::rt();
  m.claim = c.mode == Mode::kThroughput || rt.n_hosts == 1;
  m.hosts = rt.n_hosts > 1;
  // The default block count: this PE's share of the host's CPUs. The PEs of a host that fill its CPUs gain
  // nothing from a second block, which waits for a CPU another PE holds (one block measured faster at every
  // size, most at decoding sizes: docs/moe.md).
  if (c.block_num > 0) {
    m.blocks = c.block_num;
  } else {
    const int here = static_cast<int>(std::count(rt.host_of.begin(), rt.host_of.end(), rt.host_of[m.me]));
    m.blocks = std::max(1, kernel::default_block_num() / std::max(1, here));
  }
  const size_t L = static_cast<size_t>(std::max(1, m.max_local));
  const size_t slots = L * m.cap;
  auto alloc = [&](size_t bytes) {
    void* p = pgas::sym_calloc(1, std::max<size_t>(bytes, 8), kRoutine);
    if (!p)
      throw Error("tessera::moe::Dispatcher: the symmetric heap has no room for " + str(static_cast<long long>(bytes)) +
                  " bytes (raise SHMEM_SYMMETRIC_SIZE, or lower max_tokens, capacity or hidden)");
    return p;
  };
  m.recv = static_cast<char*>(alloc(slots * m.row));
  m.meta = static_cast<uint64_t*>(alloc(slots * sizeof(uint64_t)));
  m.cnt = static_cast<int64_t*>(alloc(2 * L * sizeof(int64_t)));
  m.ll_sig = static_cast<uint64_t*>(alloc(L * m.n * sizeof(uint64_t)));
  m.comb = static_cast<char*>(alloc(static_cast<size_t>(c.max_tokens) * c.top_k * m.row));
  m.ll_done = static_cast<uint64_t*>(alloc(m.n * sizeof(uint64_t)));
  m.ret_off = static_cast<uint64_t*>(alloc(m.n * sizeof(uint64_t)));
  m.dispatched = static_cast<uint64_t*>(alloc(sizeof(uint64_t)));
  m.combined = static_cast<uint64_t*>(alloc(sizeof(uint64_t)));
  m.counts.assign(static_cast<size_t>(m.local()), 0);
  if (!m.claim) {
    m.packed.resize(static_cast<size_t>(m.local()) * m.n * c.max_tokens * m.row);
    m.packed_meta.resize(static_cast<size_t>(m.local()) * m.n * c.max_tokens);
  }
}

Dispatcher::~Dispatcher() {
  Impl& m = *p_;
  if (!pgas::is_initialized()) return;
  for (void* p : {static_cast<void*>(m.combined), static_cast<void*>(m.dispatched), static_cast<void*>(m.ret_off),
                  static_cast<void*>(m.ll_done), static_cast<void*>(m.comb),
                  static_cast<void*>(m.ll_sig), static_cast<void*>(m.cnt), static_cast<void*>(m.meta),
                  static_cast<void*>(m.recv)})
    pgas::sym_free(p, kRoutine);
}

void Dispatcher::dispatch(const void* tokens, int n_tokens, const int32_t* expert_ids, const float* weights) {
  Impl& m = *p_;
  const Config& c = m.cfg;
  const int K = c.top_k;
  if (n_tokens < 0 || n_tokens > c.max_tokens)
    throw Error("tessera::moe::dispatch: n_tokens is " + str(n_tokens) + "; the Dispatcher takes 0.." + str(c.max_tokens) +
                " (Config::max_tokens)");
  if (n_tokens && (!tokens || !expert_ids || !weights))
    throw Error("tessera::moe::dispatch: tokens, expert_ids or weights is null with " + str(n_tokens) + " tokens");
  for (int i = 0; i < n_tokens * K; ++i)
    if (expert_ids[i] < -1 || expert_ids[i] >= c.num_experts)
      throw Error("tessera::moe::dispatch: expert id " + str(expert_ids[i]) + " of token " + str(i / K) + " (k " +
                  str(i % K) + ") is out of range: there are " + str(c.num_experts) + " experts (-1: none)");
  // Low latency sizes each source's region at an expert for one row per token: a token that names an expert
  // twice would overrun it.
  if (c.mode == Mode::kLowLatency)
    for (int t = 0; t < n_tokens; ++t)
      for (int k = 1; k < K; ++k)
        for (int j = 0; j < k; ++j)
          if (expert_ids[t * K + k] >= 0 && expert_ids[t * K + k] == expert_ids[t * K + j])
            throw Error("tessera::moe::dispatch: token " + str(t) + " names expert " + str(expert_ids[t * K + k]) +
                        " twice (k " + str(j) + " and " + str(k) + "); low-latency mode takes distinct experts per "
                        "token (-1 for none)");
  ++m.calls;
  m.n_tokens = n_tokens;
  m.ids.assign(expert_ids, expert_ids + static_cast<size_t>(n_tokens) * K);
  m.weights.assign(weights, weights + static_cast<size_t>(n_tokens) * K);
  m.dropped_mask.assign(static_cast<size_t>(n_tokens) * K, 0);
  if (m.hosts) m.slot_of.assign(static_cast<size_t>(n_tokens) * K, -1);
  m.dropped = 0;
  m.have_dispatch = true;
  const char* src = static_cast<const char*>(tokens);
  const size_t L = static_cast<size_t>(std::max(1, m.max_local));

  if (m.claim) {
    const int par = static_cast<int>(m.calls & 1);
    std::atomic<size_t> dropped{0};
    kernel::launch(m.launch("moe dispatch", static_cast<size_t>(n_tokens) * K * m.row), [&](kernel::BlockContext& b) {
      const int lo = static_cast<int>(static_cast<int64_t>(n_tokens) * b.block_idx() / b.block_num());
      const int hi = static_cast<int>(static_cast<int64_t>(n_tokens) * (b.block_idx() + 1) / b.block_num());
      // One fetch-and-add per (block, expert) claims a run of slots for all of the block's rows to that
      // expert: far fewer remote atomics on the counters every source contends for than one per row.
      std::vector<int64_t> next(static_cast<size_t>(c.num_experts), 0);
      for (int i = lo * K; i < hi * K; ++i)
        if (expert_ids[i] >= 0) ++next[expert_ids[i]];
      for (int e = 0; e < c.num_experts; ++e)
        if (next[e]) {
          const int pe = m.owner[e];
          next[e] = pgas::atomic_fetch_add<int64_t>(kRoutine, m.cnt + par * L + (e - m.first[pe]), next[e], pe);
        }
      // Rows for a PE on another host are staged per expert and put as one run: this block's slots at an
      // expert are consecutive from the start it claimed.
      std::vector<int64_t> start;
      std::vector<std::vector<char>> stage;
      std::vector<std::vector<uint64_t>> stage_meta;
      if (m.hosts) {
        start = next;
        stage.resize(static_cast<size_t>(c.num_experts));
        stage_meta.resize(static_cast<size_t>(c.num_experts));
      }
      size_t mine = 0;
      for (int t = lo; t < hi; ++t)
        for (int k = 0; k < K; ++k) {
          const int e = expert_ids[t * K + k];
          if (e < 0) continue;
          const int pe = m.owner[e], le = e - m.first[pe];
          const int64_t slot = next[e]++;
          if (m.hosts) m.slot_of[static_cast<size_t>(t) * K + k] = slot;
          if (slot >= m.cap) {
            m.dropped_mask[static_cast<size_t>(t) * K + k] = 1;
            ++mine;
            continue;
          }
          const char* row = src + static_cast<size_t>(t) * m.row;
          if (m.hosts && m.far(pe)) {
            stage[e].insert(stage[e].end(), row, row + m.row);
            stage_meta[e].push_back(pack(m.me, t, k));
            continue;
          }
          const size_t at = static_cast<size_t>(le) * m.cap + static_cast<size_t>(slot);
          pgas::put_bytes(kRoutine, m.recv + at * m.row, row, m.row, pe);
          pgas::p<uint64_t>(kRoutine, m.meta + at, pack(m.me, t, k), pe);
        }
      for (int e = 0; e < static_cast<int>(stage.size()); ++e)
        if (!stage_meta[e].empty())
          m.put_run(e, static_cast<size_t>(e - m.first[m.owner[e]]) * m.cap + static_cast<size_t>(start[e]), stage[e],
                    stage_meta[e]);
      if (mine) dropped.fetch_add(mine, std::memory_order_relaxed);
    });
    m.dropped = dropped.load();
    if (m.hosts) m.announce_positions();
    m.all_signal_and_wait(m.dispatched, "tessera::moe::dispatch (waiting for every PE's tokens)");
    for (int le = 0; le < m.local(); ++le) {
      std::atomic_ref<int64_t> w(m.cnt[par * L + le]);
      m.counts[le] = static_cast<int>(std::min<int64_t>(w.load(std::memory_order_acquire), m.cap));
      w.store(0, std::memory_order_relaxed);
    }
    m.dispatched_now();
    return;
  }

  // Low latency (PEs on several hosts): number the rows per expert here, stage them, put each expert's rows
  // as one run into this PE's region there, then each PE's counts in one put with one signal.
  std::vector<int> next(static_cast<size_t>(c.num_experts), 0);
  std::vector<std::vector<char>> stage(static_cast<size_t>(c.num_experts));
  std::vector<std::vector<uint64_t>> stage_meta(static_cast<size_t>(c.num_experts));
  for (int t = 0; t < n_tokens; ++t)
    for (int k = 0; k < K; ++k) {
      const int e = expert_ids[t * K + k];
      if (e < 0) continue;
      m.slot_of[static_cast<size_t>(t) * K + k] = next[e]++;
      const char* row = src + static_cast<size_t>(t) * m.row;
      stage[e].insert(stage[e].end(), row, row + m.row);
      stage_meta[e].push_back(pack(m.me, t, k));
    }
  for (int e = 0; e < c.num_experts; ++e)
    if (next[e])
      m.put_run(e, (static_cast<size_t>(e - m.first[m.owner[e]]) * m.n + m.me) * c.max_tokens, stage[e], stage_meta[e]);
  m.announce_positions();
  pgas::fence();  // the rows and positions before their counts, on every transport
  std::vector<uint64_t> cnt(L);
  for (int pe = 0; pe < m.n; ++pe) {
    const int here = m.first[pe + 1] - m.first[pe];
    for (int le = 0; le < here; ++le) cnt[static_cast<size_t>(le)] = static_cast<uint64_t>(next[m.first[pe] + le]);
    pgas::put_signal(kRoutine, m.ll_sig + static_cast<size_t>(m.me) * L, cnt.data(),
                     static_cast<size_t>(here) * sizeof(uint64_t), m.ll_done + m.me, m.calls, pgas::kSignalSet, pe);
  }
  std::fill(m.counts.begin(), m.counts.end(), 0);
  for (int s = 0; s < m.n; ++s) {
    pgas::wait_until("tessera::moe::dispatch (low latency: waiting for a source's counts)", m.ll_done + s, pgas::kGe,
                     m.calls);
    for (int le = 0; le < m.local(); ++le) {
      const int c_s = static_cast<int>(pgas::load_acquire(m.ll_sig + static_cast<size_t>(s) * L + le));
      const size_t from = (static_cast<size_t>(le) * m.n + s) * c.max_tokens;
      const size_t to = static_cast<size_t>(le) * m.n * c.max_tokens + m.counts[le];
      memcopy(m.packed.data() + to * m.row, m.recv + from * m.row, static_cast<size_t>(c_s) * m.row);
      memcopy(m.packed_meta.data() + to, m.meta + from, static_cast<size_t>(c_s) * sizeof(uint64_t));
      m.counts[le] += c_s;
    }
  }
  m.dispatched_now();
}

void Dispatcher::combine_expert(int le) {
  Impl& m = *p_;
  if (!m.have_dispatch) throw Error("tessera::moe::combine_expert: no dispatch to combine (call dispatch first)");
  if (le < 0 || le >= m.local())
    throw Error("tessera::moe::combine_expert: local expert " + str(le) + " is out of range: this PE owns " + str(m.local()));
  if (m.sent[static_cast<size_t>(le)])
    throw Error("tessera::moe::combine_expert: local expert " + str(le) + " was sent home already in this call");
  m.send_home(le);
}

void Dispatcher::combine(void* out) {
  Impl& m = *p_;
  const Config& c = m.cfg;
  const int K = c.top_k;
  if (!m.have_dispatch) throw Error("tessera::moe::combine: no dispatch to combine (call dispatch first)");
  if (m.n_tokens && !out) throw Error("tessera::moe::combine: out is null with " + str(m.n_tokens) + " tokens");
  m.have_dispatch = false;
  // Every received row not sent home yet (combine_expert) goes home, to comb[token][k] at its origin (across
  // hosts: to the origin's announced range).
  if (m.hosts) {
    for (int le = 0; le < m.local(); ++le)
      if (!m.sent[static_cast<size_t>(le)]) m.send_home(le);
  } else {
    std::vector<std::pair<int, int>> work;  // (local expert, row)
    for (int le = 0; le < m.local(); ++le)
      for (int r = 0; r < m.counts[le] && !m.sent[static_cast<size_t>(le)]; ++r) work.emplace_back(le, r);
    kernel::launch(m.launch("moe combine (send)", work.size() * m.row), [&](kernel::BlockContext& b) {
      const size_t lo = work.size() * b.block_idx() / b.block_num(), hi = work.size() * (b.block_idx() + 1) / b.block_num();
      for (size_t i = lo; i < hi; ++i) m.put_home(work[i].first, work[i].second);
    });
  }
  m.all_signal_and_wait(m.combined, "tessera::moe::combine (waiting for the outputs of every PE)");
  // out[t] = sum_k w[t][k] * comb[t][k], dropped and unrouted pairs left out; f32 sums.
  char* o = static_cast<char*>(out);
  const int H = c.hidden;
  const kernel::ops::Prims& prims =  // SIMD, either storage type as f32 lanes
      kernel::ops::prims(*kernel::kernel_dtype(kEntries[static_cast<int>(c.dtype)]));
  kernel::launch(m.launch("moe combine (sum)", static_cast<size_t>(m.n_tokens) * K * m.row), [&](kernel::BlockContext& b) {
    const int lo = static_cast<int>(static_cast<int64_t>(m.n_tokens) * b.block_idx() / b.block_num());
    const int hi = static_cast<int>(static_cast<int64_t>(m.n_tokens) * (b.block_idx() + 1) / b.block_num());
    std::vector<float> acc(static_cast<size_t>(H));
    for (int t = lo; t < hi; ++t) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int k = 0; k < K; ++k) {
        const size_t i = static_cast<size_t>(t) * K + k;
        if (m.ids[i] < 0 || m.dropped_mask[i]) continue;
        const size_t at = m.hosts ? static_cast<size_t>(m.pos[i]) : i;  // where its row came home
        prims.axpy(m.comb + at * m.row, acc.data(), static_cast<size_t>(H), m.weights[i]);
      }
      prims.from_f32(acc.data(), o + static_cast<size_t>(t) * m.row, static_cast<size_t>(H));
    }
  });
}

int Dispatcher::local_experts() const { return p_->local(); }
int Dispatcher::first_expert() const { return p_->first[p_->me]; }
int Dispatcher::capacity() const { return p_->cap; }
int Dispatcher::count(int le) const {
  if (le < 0 || le >= p_->local())
    throw Error("tessera::moe::count: local expert " + str(le) + " is out of range: this PE owns " + str(p_->local()));
  return p_->counts[le];
}
void* Dispatcher::expert_tokens(int le) {
  if (le < 0 || le >= p_->local())
    throw Error("tessera::moe::expert_tokens: local expert " + str(le) + " is out of range: this PE owns " +
                str(p_->local()));
  return p_->rows_of(le);
}
size_t Dispatcher::dropped() const { return p_->dropped; }
bool Dispatcher::was_dropped(int t, int k) const {
  if (t < 0 || t >= p_->n_tokens || k < 0 || k >= p_->cfg.top_k)
    throw Error("tessera::moe::was_dropped: (token " + str(t) + ", k " + str(k) + ") is out of range: the last dispatch had " +
                str(p_->n_tokens) + " tokens and top_k " + str(p_->cfg.top_k));
  return p_->dropped_mask[static_cast<size_t>(t) * p_->cfg.top_k + k] != 0;
}
const Config& Dispatcher::config() const { return p_->cfg; }

}  // namespace tessera::moe
