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
#include "pgas/amo.h"
#include "pgas/heap.h"
#include "pgas/order.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"

namespace tessera::moe {
namespace {
constexpr int kMaxTopK = 8;
constexpr const char* kRoutine = "tessera::moe";

// The list's entry of each moe::DType, indexed by it (tessera/moe.hpp generates both from TESSERA_MOE_DTYPES).
// The weighted sums of combine run on the kernels' primitives, so every entry must be a kernel type too.
#define TESSERA_MOE_ENTRY(e, entry) ::tessera::DType::entry,
constexpr ::tessera::DType kEntries[] = {TESSERA_MOE_DTYPES(TESSERA_MOE_ENTRY)};
#undef TESSERA_MOE_ENTRY
static_assert(std::ranges::all_of(kEntries, [](::tessera::DType t) { return kernel::kernel_dtype(t).has_value(); }),
              "a MoE element type the kernels do not take");

std::string str(long long v) { return std::to_string(v); }

uint64_t pack(int pe, int token, int k) {
  return (static_cast<uint64_t>(pe) << 40) | (static_cast<uint64_t>(token) << 8) | static_cast<uint64_t>(k);
}
int pe_of(uint64_t m) { return static_cast<int>(m >> 40); }
int token_of(uint64_t m) { return static_cast<int>((m >> 8) & 0xffffffffu); }
int k_of(uint64_t m) { return static_cast<int>(m & 0xff); }

}  // namespace

struct Dispatcher::Impl {
  Config cfg;
  int n = 0, me = 0;
  size_t esz = 0, row = 0;
  std::vector<int> first;  // first[p]: PE p's first expert; first[n] = num_experts
  std::vector<int> owner;  // expert -> PE
  int max_local = 0, cap = 0;
  // Slots are claimed with fetch-and-add (throughput mode; low latency when every PE shares this host).
  bool claim = false;
  int blocks = -1;  // kernel blocks per launch
  // symmetric
  char* recv = nullptr;
  uint64_t* meta = nullptr;
  int64_t* cnt = nullptr;
  uint64_t* ll_sig = nullptr;
  char* comb = nullptr;
  uint64_t* dispatched = nullptr;
  uint64_t* combined = nullptr;
  // local
  uint64_t calls = 0;
  std::vector<int> counts;
  std::vector<char> packed;            // low latency: rows packed per expert
  std::vector<uint64_t> packed_meta;
  std::vector<int32_t> ids;            // this PE's last dispatch
  std::vector<float> weights;
  std::vector<uint8_t> dropped_mask;
  int n_tokens = 0;
  size_t dropped = 0;
  bool have_dispatch = false;

  int local() const { return first[me + 1] - first[me]; }
  char* rows_of(int le) {
    return claim ? recv + static_cast<size_t>(le) * cap * row
                 : packed.data() + static_cast<size_t>(le) * n * cfg.max_tokens * row;
  }
  const uint64_t* meta_of(int le) const {
    return claim ? meta + static_cast<size_t>(le) * cap
                 : packed_meta.data() + static_cast<size_t>(le) * n * cfg.max_tokens;
  }
  kernel::LaunchOptions launch(const char* name) const {
    kernel::LaunchOptions o;
    o.block_num = blocks;
    o.name = name;
    return o;
  }
  // Adds 1 to `counter` at every PE (after everything this PE put before), then waits until this PE's own
  // counter shows every PE's add of this call.
  void all_signal_and_wait(uint64_t* counter, const char* what) {
    pgas::fence();
    for (int pe = 0; pe < n; ++pe) pgas::atomic_fetch_add<uint64_t>(what, counter, 1, pe);
    pgas::wait_until(what, counter, pgas::kGe, static_cast<uint64_t>(n) * calls);
  }
};

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
  for (void* p : {static_cast<void*>(m.combined), static_cast<void*>(m.dispatched), static_cast<void*>(m.comb),
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
  m.dropped = 0;
  m.have_dispatch = true;
  const char* src = static_cast<const char*>(tokens);
  const size_t L = static_cast<size_t>(std::max(1, m.max_local));

  if (m.claim) {
    const int par = static_cast<int>(m.calls & 1);
    std::atomic<size_t> dropped{0};
    kernel::launch(m.launch("moe dispatch"), [&](kernel::BlockContext& b) {
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
      size_t mine = 0;
      for (int t = lo; t < hi; ++t)
        for (int k = 0; k < K; ++k) {
          const int e = expert_ids[t * K + k];
          if (e < 0) continue;
          const int pe = m.owner[e], le = e - m.first[pe];
          const int64_t slot = next[e]++;
          if (slot >= m.cap) {
            m.dropped_mask[static_cast<size_t>(t) * K + k] = 1;
            ++mine;
            continue;
          }
          const size_t at = static_cast<size_t>(le) * m.cap + static_cast<size_t>(slot);
          pgas::put_bytes(kRoutine, m.recv + at * m.row, src + static_cast<size_t>(t) * m.row, m.row, pe);
          pgas::p<uint64_t>(kRoutine, m.meta + at, pack(m.me, t, k), pe);
        }
      if (mine) dropped.fetch_add(mine, std::memory_order_relaxed);
    });
    m.dropped = dropped.load();
    m.all_signal_and_wait(m.dispatched, "tessera::moe::dispatch (waiting for every PE's tokens)");
    for (int le = 0; le < m.local(); ++le) {
      std::atomic_ref<int64_t> w(m.cnt[par * L + le]);
      m.counts[le] = static_cast<int>(std::min<int64_t>(w.load(std::memory_order_acquire), m.cap));
      w.store(0, std::memory_order_relaxed);
    }
    return;
  }

  // Low latency: number the rows per expert here, put them, then one signal word per expert carries the count.
  std::vector<int> next(static_cast<size_t>(c.num_experts), 0);
  for (int t = 0; t < n_tokens; ++t)
    for (int k = 0; k < K; ++k) {
      const int e = expert_ids[t * K + k];
      if (e < 0) continue;
      const int pe = m.owner[e], le = e - m.first[pe];
      const size_t at = (static_cast<size_t>(le) * m.n + m.me) * c.max_tokens + static_cast<size_t>(next[e]++);
      pgas::put_bytes(kRoutine, m.recv + at * m.row, src + static_cast<size_t>(t) * m.row, m.row, pe);
      pgas::p<uint64_t>(kRoutine, m.meta + at, pack(m.me, t, k), pe);
    }
  pgas::fence();  // the rows before their counts, on every transport
  for (int e = 0; e < c.num_experts; ++e) {
    const int pe = m.owner[e], le = e - m.first[pe];
    pgas::atomic_set<uint64_t>(kRoutine, m.ll_sig + static_cast<size_t>(le) * m.n + m.me,
                               (m.calls << 32) | static_cast<uint64_t>(next[e]), pe);
  }
  for (int le = 0; le < m.local(); ++le) {
    int got = 0;
    for (int s = 0; s < m.n; ++s) {
      uint64_t* w = m.ll_sig + static_cast<size_t>(le) * m.n + s;
      pgas::wait_until("tessera::moe::dispatch (low latency: waiting for a source's count)", w, pgas::kGe, m.calls << 32);
      const uint64_t v = pgas::load_acquire(w);
      const int c_s = static_cast<int>(v & 0xffffffffu);
      const size_t from = (static_cast<size_t>(le) * m.n + s) * c.max_tokens;
      const size_t to = static_cast<size_t>(le) * m.n * c.max_tokens + got;
      memcopy(m.packed.data() + to * m.row, m.recv + from * m.row, static_cast<size_t>(c_s) * m.row);
      memcopy(m.packed_meta.data() + to, m.meta + from, static_cast<size_t>(c_s) * sizeof(uint64_t));
      got += c_s;
    }
    m.counts[le] = got;
  }
}

void Dispatcher::combine(void* out) {
  Impl& m = *p_;
  const Config& c = m.cfg;
  const int K = c.top_k;
  if (!m.have_dispatch) throw Error("tessera::moe::combine: no dispatch to combine (call dispatch first)");
  if (m.n_tokens && !out) throw Error("tessera::moe::combine: out is null with " + str(m.n_tokens) + " tokens");
  m.have_dispatch = false;
  // Every received row goes home, to comb[token][k] at its origin.
  std::vector<std::pair<int, int>> work;  // (local expert, row)
  for (int le = 0; le < m.local(); ++le)
    for (int r = 0; r < m.counts[le]; ++r) work.emplace_back(le, r);
  kernel::launch(m.launch("moe combine (send)"), [&](kernel::BlockContext& b) {
    const size_t lo = work.size() * b.block_idx() / b.block_num(), hi = work.size() * (b.block_idx() + 1) / b.block_num();
    for (size_t i = lo; i < hi; ++i) {
      const auto [le, r] = work[i];
      const uint64_t mt = m.meta_of(le)[r];
      const size_t at = static_cast<size_t>(token_of(mt)) * K + k_of(mt);
      pgas::put_bytes(kRoutine, m.comb + at * m.row, m.rows_of(le) + static_cast<size_t>(r) * m.row, m.row, pe_of(mt));
    }
  });
  m.all_signal_and_wait(m.combined, "tessera::moe::combine (waiting for the outputs of every PE)");
  // out[t] = sum_k w[t][k] * comb[t][k], dropped and unrouted pairs left out; f32 sums.
  char* o = static_cast<char*>(out);
  const int H = c.hidden;
  const kernel::ops::Prims& prims =  // SIMD, either storage type as f32 lanes
      kernel::ops::prims(*kernel::kernel_dtype(kEntries[static_cast<int>(c.dtype)]));
  kernel::launch(m.launch("moe combine (sum)"), [&](kernel::BlockContext& b) {
    const int lo = static_cast<int>(static_cast<int64_t>(m.n_tokens) * b.block_idx() / b.block_num());
    const int hi = static_cast<int>(static_cast<int64_t>(m.n_tokens) * (b.block_idx() + 1) / b.block_num());
    std::vector<float> acc(static_cast<size_t>(H));
    for (int t = lo; t < hi; ++t) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int k = 0; k < K; ++k) {
        const size_t i = static_cast<size_t>(t) * K + k;
        if (m.ids[i] < 0 || m.dropped_mask[i]) continue;
        prims.axpy(m.comb + i * m.row, acc.data(), static_cast<size_t>(H), m.weights[i]);
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
