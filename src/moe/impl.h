// The state of a tessera::moe::Dispatcher (moe.cc: set-up, dispatch, combine; home.cc: the way home across
// hosts) and the helpers both use. Private to src/moe.
#pragma once
#include <tessera/moe.hpp>

#include <tessera/kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "kernel/dtype.h"
#include "pgas/amo.h"
#include "pgas/order.h"
#include "pgas/p2p.h"
#include "pgas/runtime.h"

namespace tessera::moe {
namespace detail {
inline constexpr int kMaxTopK = 8;
inline constexpr const char* kRoutine = "tessera::moe";

// The list's entry of each moe::DType, indexed by it (tessera/moe.hpp generates both from TESSERA_MOE_DTYPES).
// The weighted sums of combine run on the kernels' primitives, so every entry must be a kernel type too.
#define TESSERA_MOE_ENTRY(e, entry) ::tessera::DType::entry,
inline constexpr ::tessera::DType kEntries[] = {TESSERA_MOE_DTYPES(TESSERA_MOE_ENTRY)};
#undef TESSERA_MOE_ENTRY
static_assert(std::ranges::all_of(kEntries, [](::tessera::DType t) { return kernel::kernel_dtype(t).has_value(); }),
              "a MoE element type the kernels do not take");

inline std::string str(long long v) { return std::to_string(v); }

inline uint64_t pack(int pe, int token, int k) {
  return (static_cast<uint64_t>(pe) << 40) | (static_cast<uint64_t>(token) << 8) | static_cast<uint64_t>(k);
}
inline int pe_of(uint64_t m) { return static_cast<int>(m >> 40); }
inline int token_of(uint64_t m) { return static_cast<int>((m >> 8) & 0xffffffffu); }
inline int k_of(uint64_t m) { return static_cast<int>(m & 0xff); }

}  // namespace detail

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
  // Across hosts:
  bool hosts = false;
  uint64_t* ll_done = nullptr;  // low latency: [source PE] the call whose counts (ll_sig[source][le]) are in
  uint64_t* ret_off = nullptr;  // [origin PE]: where in the origin's comb this PE's rows for it go home
  std::vector<int64_t> slot_of;  // this PE's last dispatch: (t, k) -> its slot (or index) at its expert
  std::vector<int64_t> pos;      // (t, k) -> its row in comb after combine (-1: not routed or dropped)
  std::vector<uint64_t> home_at;  // [local expert][origin]: where its first row for the origin lands there
  // Since the last dispatch: the local experts whose rows have gone home (combine_expert), and whether
  // home_at has been computed for this dispatch.
  std::vector<uint8_t> sent;
  bool home_planned = false;
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
  // `bytes`: the data the launch moves or sums. Below kInlineBytes one block, on the calling thread: waking a
  // worker costs more than the work (a decoding step's sum of a few rows).
  static constexpr size_t kInlineBytes = size_t{256} << 10;
  kernel::LaunchOptions launch(const char* name, size_t bytes) const {
    kernel::LaunchOptions o;
    o.block_num = bytes < kInlineBytes ? 1 : blocks;
    o.name = name;
    return o;
  }
  bool far(int pe) const {
    return pgas::rt().host_of[static_cast<size_t>(pe)] != pgas::rt().host_of[static_cast<size_t>(me)];
  }
  // Rows staged for one expert (and their origins) put whole at slot `at` of its PE's recv and meta.
  void put_run(int e, size_t at, const std::vector<char>& rows, const std::vector<uint64_t>& origins) {
    const int pe = owner[e];
    pgas::put_bytes(detail::kRoutine, recv + at * row, rows.data(), rows.size(), pe);
    pgas::put_bytes(detail::kRoutine, meta + at, origins.data(), origins.size() * sizeof(uint64_t), pe);
  }
  // On one host: row r of local expert le home to comb[token][k] at its origin.
  void put_home(int le, int r) {
    const uint64_t mt = meta_of(le)[r];
    const size_t at = static_cast<size_t>(detail::token_of(mt)) * cfg.top_k + detail::k_of(mt);
    pgas::put_bytes(detail::kRoutine, comb + at * row, rows_of(le) + static_cast<size_t>(r) * row, row, detail::pe_of(mt));
  }
  void announce_positions();
  void plan_home();
  void send_home(int le);
  void dispatched_now() {
    sent.assign(static_cast<size_t>(local()), 0);
    home_planned = false;
  }
  // Adds 1 to `counter` at every PE (after everything this PE put before), then waits until this PE's own
  // counter shows every PE's add of this call.
  void all_signal_and_wait(uint64_t* counter, const char* what) {
    pgas::fence();
    for (int pe = 0; pe < n; ++pe) {
      // Across hosts a fetching atomic waits a round trip for an old value nobody reads; a signal's add
      // travels one way, ordered after the puts by the fence as the atomic is.
      if (hosts) pgas::put_signal(what, counter, nullptr, 0, counter, 1, pgas::kSignalAdd, pe);
      else pgas::atomic_fetch_add<uint64_t>(what, counter, 1, pe);
    }
    pgas::wait_until(what, counter, pgas::kGe, static_cast<uint64_t>(n) * calls);
  }
};

}  // namespace tessera::moe
