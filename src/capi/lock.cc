// Distributed locks (shmem_set_lock / shmem_test_lock / shmem_clear_lock).
//
// A ticket lock in the 64-bit lock word of PE 0 (the user's symmetric long, initialised to 0): the high half
// hands out tickets, the low half says which ticket is served. set_lock takes a ticket and waits (spin ->
// yield -> futex, under the job deadline) until it is served; clear_lock completes the holder's puts (quiet)
// and serves the next ticket, then rings the doorbell of every PE that sleeps. Acquisition is first come,
// first served. Holding is per PE (any thread of the holding PE may clear); a PE remembers which locks it
// holds so clearing a lock it does not hold is reported instead of corrupting the queue.
// The word is reached through PE 0's transport: loads and locked instructions on its mapping on PE 0's host,
// remote atomics from another host, where a waiter polls the word (nothing rings its doorbell across hosts:
// the wait's growing sleep slices bound both the traffic and the delay).
#include <mutex>
#include <unordered_set>

#include "capi/handles.h"
#include "pgas/amo.h"
#include "pgas/order.h"

using namespace tessera;

namespace {

std::mutex g_mu;
std::unordered_set<const long*> g_held;  // locks this PE holds

constexpr uint64_t kTicket = uint64_t{1} << 32;
inline uint32_t serving(uint64_t w) { return static_cast<uint32_t>(w); }
inline uint32_t next_ticket(uint64_t w) { return static_cast<uint32_t>(w >> 32); }

uint64_t* lock_word(const char* r, long* lock) {
  if (!pgas::is_initialized()) pgas::fail_not_initialized(r);
  if (!lock) log::fatal("{}: lock is a null pointer", r);
  return reinterpret_cast<uint64_t*>(lock);
}

void mark_held(const long* lock) {
  std::lock_guard lk(g_mu);
  g_held.insert(lock);
}

}  // namespace

extern "C" {

void shmem_set_lock(long* lock) {
  constexpr const char* r = "shmem_set_lock";
  uint64_t* w = lock_word(r, lock);
  const uint32_t ticket = next_ticket(pgas::atomic_fetch_add(r, w, kTicket, 0));
  sync::wait_until([&] { return serving(pgas::atomic_fetch(r, w, 0)) == ticket; },
                   [&] {
                     uint64_t v = pgas::atomic_fetch(r, w, 0);
                     return fmt::format("shmem_set_lock: lock {} holds ticket {}, now serving {} ({} PEs queued "
                                        "ahead); the holder never called shmem_clear_lock",
                                        (void*)lock, ticket, serving(v), ticket - serving(v));
                   });
  mark_held(lock);
}

int shmem_test_lock(long* lock) {
  constexpr const char* r = "shmem_test_lock";
  uint64_t* w = lock_word(r, lock);
  const uint64_t old = pgas::atomic_fetch(r, w, 0);
  if (next_ticket(old) != serving(old)) return 1;  // held or queued
  if (pgas::atomic_compare_swap(r, w, old, old + kTicket, 0) != old) return 1;
  mark_held(lock);
  return 0;
}

void shmem_clear_lock(long* lock) {
  constexpr const char* r = "shmem_clear_lock";
  uint64_t* w = lock_word(r, lock);
  {
    std::lock_guard lk(g_mu);
    if (g_held.erase(lock) == 0)
      log::fatal("shmem_clear_lock: lock {} is not held by PE {} (never set by it, or already cleared)",
                 (void*)lock, pgas::rt().my_pe);
  }
  pgas::quiet();  // the holder's updates are visible before the next holder enters
  uint64_t old = pgas::atomic_fetch(r, w, 0);
  for (;;) {
    const uint64_t next = (old & ~uint64_t{0xffffffff}) | static_cast<uint32_t>(serving(old) + 1);
    const uint64_t seen = pgas::atomic_compare_swap(r, w, old, next, 0);
    if (seen == old) break;
    old = seen;
  }
  // Waiters of this host may sleep on their doorbells; those of other hosts poll.
  for (int pe = 0; pe < pgas::rt().n_pes; ++pe)
    if (pgas::rt().bases[static_cast<size_t>(pe)]) sync::notify(pe);
}

}  // extern "C"
