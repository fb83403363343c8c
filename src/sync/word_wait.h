// Waiting on a 32-bit word inside one PE: the policy of wait.h (spin -> yield -> futex, under a deadline,
// watching the job-abort word), but parked on the word itself so the writer can wake exactly its waiters.
//
// Why not wait_until: that parks on the PE's doorbell, which only PGAS writers ring; kernel grid barriers,
// launch completion and comm-stream events are private to a PE and want an immediate wake-up.
//
// Protocol (no lost wake-ups): the waiter increments `sleepers` (seq_cst) before re-checking the word and
// calling futex_wait(word, old); the writer stores the new value (seq_cst) and then reads `sleepers`
// (seq_cst), calling futex_wake only when somebody may be parked. Either the writer sees the sleeper or the
// waiter sees the new value; futex_wait itself re-checks the value atomically.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "base/cpu.h"
#include "sync/futex.h"
#include "sync/wait.h"

namespace tessera::sync {

struct WaitPolicy {
  bool spin = true;          // false when blocks outnumber CPUs: spinning only delays the block we wait for
  bool deadline = true;      // false for waits whose length is the user's business (kernel completion)
  bool yield = true;         // false: the caller yielded already where it helps (to threads of the job)
};

// Blocks while word == old. describe() is called only when the deadline expires.
template <typename Describe>
void wait_while_equal(const std::atomic<uint32_t>& word_c, uint32_t old, std::atomic<uint32_t>& sleepers,
                      WaitPolicy policy, Describe&& describe) {
  auto& word = const_cast<std::atomic<uint32_t>&>(word_c);
  if (word.load(std::memory_order_acquire) != old) return;
  const uint64_t start = now_ns();
  trace::WaitSpan traced{start};  // TESSERA_TRACE: one event for this wait, with the last phase reached
  const bool shared = cpus_shared();  // as wait_until_slow: short spin, no yield
  // Phase 1: spin (the other block is usually a few microseconds behind).
  if (policy.spin) {
    const uint64_t spin_end = start + (shared ? spin_ns() / 4 : spin_ns());
    for (uint32_t i = 0;; ++i) {
      cpu_relax();
      if (word.load(std::memory_order_acquire) != old) return;
      if ((i & 63) == 63 && now_ns() >= spin_end) break;
    }
  }
  // Phase 2: yield, so an oversubscribed CPU runs the thread we are waiting for.
  traced.phase = trace::kYield;
  const uint64_t yield_end = now_ns() + yield_ns();
  const std::atomic<uint32_t>* abort_word = wait_context().abort_word;
  for (; !shared && policy.yield;) {
    sched_yield_wrapper();
    if (word.load(std::memory_order_acquire) != old) return;
    if (now_ns() >= yield_end) break;
  }
  // Phase 3: park on the word in slices, re-checking abort and deadline between slices. Under the test hook
  // TESSERA_TEST_NO_RECHECK, until the deadline (an hour at a time without one) or a wake-up.
  const uint64_t deadline = start + timeout_ns();
  const bool recheck = !no_recheck();
  uint64_t slice = 100'000;
  traced.phase = trace::kSleep;
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  bool timed_out = false;  // the last park ended at its timeout, not by a wake-up
  for (;;) {
    if (word.load(std::memory_order_seq_cst) != old) {
      // Without slices, a park that timed out ended at the deadline: the word changed and nobody woke us.
      if (timed_out && !recheck) {
        sleepers.fetch_sub(1);
        lost_wakeup(describe(), static_cast<double>(now_ns() - start) / 1e9);
      }
      break;
    }
    if (abort_word) {
      uint32_t a = abort_word->load(std::memory_order_relaxed);
      if (a) {
        sleepers.fetch_sub(1);
        exit_for_abort(a, describe());
      }
    }
    uint64_t now = now_ns();
    if (policy.deadline && now >= deadline) {
      sleepers.fetch_sub(1);
      deadline_expired(describe(), static_cast<double>(now - start) / 1e9);
    }
    timed_out = !futex_wait(&word, old,
                            recheck ? slice : policy.deadline ? deadline - now : uint64_t{3600} * 1'000'000'000);
    if (slice < 50'000'000) slice *= 2;
  }
  sleepers.fetch_sub(1, std::memory_order_relaxed);
}

// Publishes `value` into word and wakes parked waiters, if any.
inline void store_and_wake(std::atomic<uint32_t>& word, uint32_t value, std::atomic<uint32_t>& sleepers) {
  word.store(value, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) != 0) futex_wake(&word);
}

}  // namespace tessera::sync
