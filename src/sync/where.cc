#include "sync/where.h"

#include <cstring>
#include <iterator>

namespace tessera::sync {

WhereContext g_where;

void set_where_context(const WhereContext& ctx) { g_where = ctx; }

const char* call_name(Call c) {
  static constexpr const char* kNames[] = {"none", "shmem_barrier_all", "shmem_sync_all", "shmem_team_sync",
                                           "collective", "shmem_wait_until", "the first call on an active set"};
  static_assert(std::size(kNames) == static_cast<size_t>(Call::kNumCalls));
  const auto i = static_cast<size_t>(c);
  return i < std::size(kNames) ? kNames[i] : "?";
}

void where_settle(std::string_view what, bool deadline) {
  PeWhere* w = g_where.mine;
  if (!w) return;
  if (deadline && g_where.deadline) {
    uint32_t expected = 0;
    g_where.deadline->compare_exchange_strong(expected, static_cast<uint32_t>(g_where.my_pe + 1));
  }
  if (w->settled.load(std::memory_order_relaxed)) return;
  // The first line: the flight recorders that collectives append follow it, and the expiring PE prints them.
  // A longer line ends in "..." where it was cut.
  const std::string_view first = what.substr(0, what.find('\n'));
  const bool cut = first.size() > kDetailBytes - 1;
  const size_t n = cut ? kDetailBytes - 4 : first.size();
  std::memcpy(w->detail, first.data(), n);  // copy-ok: hang-report text
  if (cut) std::memcpy(w->detail + n, "...", 3);
  w->detail[cut ? n + 3 : n] = '\0';
  w->settled.store(1, std::memory_order_release);
}

}  // namespace tessera::sync
