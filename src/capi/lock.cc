// Distributed locks (shmem_set_lock / shmem_test_lock / shmem_clear_lock).
//
// A ticket lock in the 64-bit lock word of PE 0 (the user's symmetric long, initialised to 0): the high half
// hands out tickets, the low half says which ticket is served. set_lock takes a ticket and waits (spin ->
// yield -> futex, under the job deadline) until it is served; clear_lock completes the holder's puts (quiet)
// and serves the next ticket, then rings the doorbell of every PE that sleeps. Acquisition is first come,
// first served. Holding is per PE (any thread of the holding PE may clear); a PE remembers which locks it
// holds so clearing a lock it does not hold is reported instead of corrupting the queue.
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

std::atomic_ref<uint64_t> lock_word(const char* r, long* lock) {
  if (!pgas::is_initialized()) pgas::fail_not_initialized(r);
  if (!lock) log::fatal("{}: lock is a null pointer", r);
  return pgas::amo_ref(r, reinterpret_cast<uint64_t*>(lock), 0);
}

void mark_held(const long* lock) {
  std::lock_guard lk(g_mu);
  g_held.insert(lock);
}

}  // namespace

extern "C" {

void shmem_set_lock(long* lock) {
  auto w = lock_word("shmem_set_lock", lock);
  const uint32_t ticket = next_ticket(w.fetch_add(kTicket, std::memory_order_acq_rel));
  sync::wait_until([&] { return serving(w.load(std::memory_order_acquire)) == ticket; },
                   [&] {
                     uint64_t v = w.load();
                     return fmt::format("shmem_set_lock: lock {} holds ticket {}, now serving {} ({} PEs queued "
                                        "ahead); the holder never called shmem_clear_lock",
                                        (void*)lock, ticket, serving(v), ticket - serving(v));
                   });
  mark_held(lock);
}

int shmem_test_lock(long* lock) {
  auto w = lock_word("shmem_test_lock", lock);
  uint64_t old = w.load(std::memory_order_acquire);
  if (next_ticket(old) != serving(old)) return 1;  // held or queued
  if (!w.compare_exchange_strong(old, old + kTicket, std::memory_order_acq_rel)) return 1;
  mark_held(lock);
  return 0;
}

void shmem_clear_lock(long* lock) {
  auto w = lock_word("shmem_clear_lock", lock);
  {
    std::lock_guard lk(g_mu);
    if (g_held.erase(lock) == 0)
      log::fatal("shmem_clear_lock: lock {} is not held by PE {} (never set by it, or already cleared)",
                 (void*)lock, pgas::rt().my_pe);
  }
  pgas::quiet();  // the holder's updates are visible before the next holder enters
  uint64_t old = w.load(std::memory_order_relaxed);
  while (!w.compare_exchange_weak(old, (old & ~uint64_t{0xffffffff}) | static_cast<uint32_t>(serving(old) + 1),
                                  std::memory_order_release, std::memory_order_relaxed)) {
  }
  for (int pe = 0; pe < pgas::rt().n_pes; ++pe) sync::notify(pe);
}

}  // extern "C"
