// sync/barrier_forms.h: the dissemination partners exhaustively for small sizes, and every form run by
// threads as members (words in this process's memory, waits that yield), at sizes {1,2,3,4,7,8}: no member
// leaves barrier i before every member has entered it.
#include "sync/barrier_forms.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace tessera::sync::barrier {
namespace {

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

TEST(Dissemination, PartnersAreInversesAndEveryMemberHearsFromAll) {
  for (int n = 1; n <= 64; ++n) {
    const int rounds = dissemination_rounds(n);
    ASSERT_EQ(rounds, ceil_log2(n)) << "n " << n;
    // knows[r]: the members r has heard from, directly or through others, after the rounds so far.
    std::vector<std::vector<bool>> knows(static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(n)));
    for (int r = 0; r < n; ++r) knows[static_cast<size_t>(r)][static_cast<size_t>(r)] = true;
    for (int k = 0; k < rounds; ++k) {
      auto before = knows;
      for (int r = 0; r < n; ++r) {
        const int to = dissemination_to(r, k, n), from = dissemination_from(r, k, n);
        ASSERT_TRUE(to >= 0 && to < n && from >= 0 && from < n) << "n " << n << " r " << r << " k " << k;
        ASSERT_NE(to, r) << "n " << n << " r " << r << " k " << k;
        ASSERT_EQ(dissemination_from(to, k, n), r) << "n " << n << " r " << r << " k " << k;
        // round k: r hears what `from` knew when it signalled (after its rounds before k)
        for (int m = 0; m < n; ++m)
          if (before[static_cast<size_t>(from)][static_cast<size_t>(m)])
            knows[static_cast<size_t>(r)][static_cast<size_t>(m)] = true;
      }
      // Not yet complete before the last round: the round count is the least that suffices.
      if (k + 1 < rounds)
        for (int r = 0; r < n; ++r) {
          int heard = 0;
          for (bool b : knows[static_cast<size_t>(r)]) heard += b;
          ASSERT_EQ(heard, std::min(n, 1 << (k + 1))) << "n " << n << " r " << r << " after round " << k;
        }
    }
    for (int r = 0; r < n; ++r)
      for (int m = 0; m < n; ++m)
        ASSERT_TRUE(knows[static_cast<size_t>(r)][static_cast<size_t>(m)])
            << "n " << n << ": " << r << " never heard from " << m;
  }
}

TEST(Dissemination, CallsSignalThenWaitPerRound) {
  std::vector<int> calls;
  const int rounds = dissemination(
      2, 7, [&](int k, int to) { calls.insert(calls.end(), {0, k, to}); },
      [&](int k, int from) { calls.insert(calls.end(), {1, k, from}); });
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(calls, (std::vector<int>{0, 0, 3, 1, 0, 1, 0, 1, 4, 1, 1, 0, 0, 2, 6, 1, 2, 5}));
}

TEST(Flat, PublishesThenWaitsForEveryOtherMember) {
  std::vector<int> calls;
  flat(1, 4, [&] { calls.push_back(-1); }, [&](int m) { calls.push_back(m); });
  EXPECT_EQ(calls, (std::vector<int>{-1, 0, 2, 3}));
  calls.clear();
  const std::vector<int> order{3, 0, 2};
  flat_in_order(order, [&] { calls.push_back(-1); }, [&](int m) { calls.push_back(m); });
  EXPECT_EQ(calls, (std::vector<int>{-1, 3, 0, 2}));
}

// ---- Every form with threads as members.

void spin_until(const std::function<bool()>& done) {
  while (!done()) sched_yield();
}

// Runs `iters` barriers of `form` (called with rank and barrier number 1, 2, ...) among n threads; each
// member records its barrier number before entering and checks, on leaving, that every member's is there.
void run_members(int n, int iters, const std::function<void(int, uint64_t)>& form) {
  std::unique_ptr<std::atomic<uint64_t>[]> entered(new std::atomic<uint64_t>[static_cast<size_t>(n)]);
  for (int r = 0; r < n; ++r) entered[static_cast<size_t>(r)] = 0;
  std::atomic<int> early{0};
  std::vector<std::thread> members;
  for (int r = 0; r < n; ++r)
    members.emplace_back([&, r] {
      for (uint64_t i = 1; i <= static_cast<uint64_t>(iters); ++i) {
        entered[static_cast<size_t>(r)].store(i, std::memory_order_relaxed);
        form(r, i);
        for (int m = 0; m < n; ++m)
          if (entered[static_cast<size_t>(m)].load(std::memory_order_relaxed) < i) early.fetch_add(1);
      }
    });
  for (auto& t : members) t.join();
  EXPECT_EQ(early.load(), 0) << "members left a barrier before every member had entered it (n " << n << ")";
}

constexpr int kSizes[] = {1, 2, 3, 4, 7, 8};
constexpr int kIters = 300;

TEST(Forms, DisseminationHoldsEveryMember) {
  for (int n : kSizes) {
    const int rounds = dissemination_rounds(n);
    std::vector<std::atomic<uint64_t>> words(static_cast<size_t>(n * (rounds + 1)));
    auto word = [&](int r, int k) -> std::atomic<uint64_t>& {
      return words[static_cast<size_t>(r * (rounds + 1) + k)];
    };
    run_members(n, kIters, [&](int r, uint64_t epoch) {
      dissemination(
          r, n, [&](int k, int to) { word(to, k).fetch_add(1, std::memory_order_release); },
          [&](int k, int) { spin_until([&] { return word(r, k).load(std::memory_order_acquire) >= epoch; }); });
    });
  }
}

TEST(Forms, FlatHoldsEveryMemberInEachWaitingShape) {
  for (int shape = 0; shape < 3; ++shape)
    for (int n : kSizes) {
      std::vector<std::atomic<uint64_t>> epoch_of(static_cast<size_t>(n));
      run_members(n, kIters, [&](int r, uint64_t epoch) {
        auto publish = [&] { epoch_of[static_cast<size_t>(r)].store(epoch, std::memory_order_release); };
        auto arrived = [&](int m) { return epoch_of[static_cast<size_t>(m)].load(std::memory_order_acquire) >= epoch; };
        auto wait_for = [&](int m) { spin_until([&] { return arrived(m); }); };
        if (shape == 0) {
          flat(r, n, publish, wait_for);
        } else if (shape == 1) {
          std::vector<int> others;  // the far members first
          for (int m = n - 1; m >= 0; --m)
            if (m != r) others.push_back(m);
          flat_in_order(others, publish, wait_for);
        } else {
          flat_one_wait(r, n, publish, arrived, [](auto&& all) { spin_until(all); });
        }
      });
    }
}

// The counter with the last arrival as the opener (teams on one host).
TEST(Forms, CounterOpenedByTheLastArrivalHoldsEveryMember) {
  for (int n : kSizes) {
    std::atomic<uint64_t> arrive{0}, gen{0};
    run_members(n, kIters, [&](int, uint64_t epoch) {
      counter([&] { return arrive.fetch_add(1, std::memory_order_acq_rel) + 1 == epoch * static_cast<uint64_t>(n); },
              [&] { gen.store(epoch, std::memory_order_release); },
              [&] { spin_until([&] { return gen.load(std::memory_order_acquire) >= epoch; }); });
    });
    EXPECT_EQ(arrive.load(), static_cast<uint64_t>(n) * kIters);
  }
}

// The counter with a fixed opener whose words are back at their idle value after every barrier (an active
// set's pSync): member 0 waits for n - 1 adds, puts the count back and sets each member's flag; each
// member puts its flag back.
TEST(Forms, CounterWithAFixedOpenerHoldsEveryMemberAndRestoresItsWords) {
  for (int n : kSizes) {
    std::atomic<long> count{0};
    std::vector<std::atomic<long>> flag(static_cast<size_t>(n));
    run_members(n, kIters, [&](int r, uint64_t) {
      counter(
          [&] {
            if (r != 0) {
              count.fetch_add(1, std::memory_order_acq_rel);
              return false;
            }
            spin_until([&] { return count.load(std::memory_order_acquire) == n - 1; });
            count.store(0, std::memory_order_relaxed);
            return true;
          },
          [&] {
            for (int m = 1; m < n; ++m) flag[static_cast<size_t>(m)].store(1, std::memory_order_release);
          },
          [&] {
            spin_until([&] { return flag[static_cast<size_t>(r)].load(std::memory_order_acquire) != 0; });
            flag[static_cast<size_t>(r)].store(0, std::memory_order_relaxed);
          });
    });
    EXPECT_EQ(count.load(), 0);
    for (auto& f : flag) EXPECT_EQ(f.load(), 0);
  }
}

}  // namespace
}  // namespace tessera::sync::barrier
