// Across hosts, the way home of a Dispatcher's rows (impl.h, moe.cc's top comment): where each of an
// origin's rows lands, announced at dispatch, and the runs an expert's PE puts there.
#include <algorithm>
#include <vector>

#include "moe/impl.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"

namespace tessera::moe {
using namespace detail;

// Across hosts: this PE's rows come home from each PE p in (local expert, slot) order, the order in which p
// holds them, into one range of comb per p: computed here for every (t, k), and each range's start put to
// p's ret_off[me] (ahead of the dispatch's signal, which p waits for before it combines).
void Dispatcher::Impl::announce_positions() {
  pos.assign(ids.size(), -1);
  std::vector<std::vector<std::pair<int64_t, size_t>>> to(static_cast<size_t>(n));  // per PE: (key, t*K+k)
  for (size_t i = 0; i < ids.size(); ++i) {
    const int e = ids[i];
    if (e < 0 || dropped_mask[i]) continue;
    const int pe = owner[e];
    to[static_cast<size_t>(pe)].emplace_back((static_cast<int64_t>(e - first[pe]) << 32) + slot_of[i], i);
  }
  int64_t off = 0;
  for (int pe = 0; pe < n; ++pe) {
    auto& v = to[static_cast<size_t>(pe)];
    std::sort(v.begin(), v.end());
    pgas::p<uint64_t>(kRoutine, ret_off + me, static_cast<uint64_t>(off), pe);
    for (const auto& entry : v) pos[entry.second] = off++;
  }
}

// Across hosts: where each local expert's rows for each origin begin in that origin's announced range
// (the rows of earlier local experts for it come first; see announce_positions for the order).
void Dispatcher::Impl::plan_home() {
  home_planned = true;
  std::vector<uint64_t> at(static_cast<size_t>(n));
  for (int o = 0; o < n; ++o) at[static_cast<size_t>(o)] = pgas::load_acquire(ret_off + o);
  home_at.resize(static_cast<size_t>(local()) * n);
  for (int le = 0; le < local(); ++le) {
    std::copy(at.begin(), at.end(), home_at.begin() + static_cast<ptrdiff_t>(le) * n);
    const uint64_t* mt = meta_of(le);
    for (int r = 0; r < counts[le]; ++r) ++at[static_cast<size_t>(pe_of(mt[r]))];
  }
}

// Sends local expert le's rows home: across hosts each run of consecutive rows for one origin in one put,
// into the origin's announced range; on one host row by row to comb[token][k] (a copy into mapped memory).
void Dispatcher::Impl::send_home(int le) {
  sent[static_cast<size_t>(le)] = 1;
  const uint64_t* mt = meta_of(le);
  const char* rows = rows_of(le);
  if (!hosts) {
    for (int r = 0; r < counts[le]; ++r) put_home(le, r);
    return;
  }
  if (!home_planned) plan_home();
  uint64_t* at = home_at.data() + static_cast<size_t>(le) * n;
  for (int r = 0; r < counts[le];) {
    const int o = pe_of(mt[r]);
    int end = r + 1;
    while (end < counts[le] && pe_of(mt[end]) == o) ++end;
    pgas::put_bytes(kRoutine, comb + at[o] * row, rows + static_cast<size_t>(r) * row, static_cast<size_t>(end - r) * row, o);
    at[o] += static_cast<uint64_t>(end - r);
    r = end;
  }
}

}  // namespace tessera::moe
