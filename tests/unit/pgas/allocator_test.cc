#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "pgas/heap.h"

namespace tessera::pgas {
namespace {

TEST(Allocator, AlignedFirstFit) {
  Allocator a(1 << 20);
  size_t x = a.allocate(10, 64);
  size_t y = a.allocate(100, 64);
  EXPECT_EQ(x, 0u);
  EXPECT_EQ(y, 64u);
  size_t z = a.allocate(1, 4096);
  EXPECT_EQ(z % 4096, 0u);
  EXPECT_GE(z, 192u);
}

TEST(Allocator, ExhaustionAndReuse) {
  Allocator a(4096);
  size_t x = a.allocate(4096, 64);
  EXPECT_EQ(x, 0u);
  EXPECT_EQ(a.allocate(1, 64), Allocator::kNone);
  EXPECT_EQ(a.release(x), 4096u);
  EXPECT_EQ(a.allocate(4096, 64), 0u);
  EXPECT_EQ(a.allocate(1ull << 40, 64), Allocator::kNone);
}

TEST(Allocator, ReleaseUnknownOffsetIsRefused) {
  Allocator a(4096);
  size_t x = a.allocate(64, 64);
  EXPECT_EQ(a.release(x + 64), 0u);
  EXPECT_EQ(a.release(x), 64u);
  EXPECT_EQ(a.release(x), 0u);  // double free
}

TEST(Allocator, CoalescesNeighbours) {
  Allocator a(64 * 3);
  size_t x = a.allocate(64, 64), y = a.allocate(64, 64), z = a.allocate(64, 64);
  a.release(x);
  a.release(z);
  a.release(y);
  EXPECT_EQ(a.largest_free(), 64u * 3);
  EXPECT_EQ(a.bytes_free(), 64u * 3);
}

TEST(Allocator, ResizeInPlace) {
  Allocator a(64 * 8);
  size_t x = a.allocate(64, 64);
  EXPECT_TRUE(a.resize_in_place(x, 256));
  EXPECT_EQ(a.block_size(x), 256u);
  size_t y = a.allocate(64, 64);
  EXPECT_EQ(y, 256u);
  EXPECT_FALSE(a.resize_in_place(x, 512));  // y is in the way
  EXPECT_TRUE(a.resize_in_place(x, 64));
  EXPECT_EQ(a.bytes_free(), 64u * 8 - 128);
}

// Two allocators fed the same sequence give the same offsets: this is what makes the heap symmetric.
TEST(Allocator, DeterministicUnderRandomSequences) {
  std::mt19937 rng(42);
  Allocator a(1 << 24), b(1 << 24);
  std::vector<size_t> live;
  for (int i = 0; i < 5000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      size_t k = rng() % live.size();
      EXPECT_EQ(a.release(live[k]), b.release(live[k]));
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      size_t bytes = rng() % 50000, align = size_t{64} << (rng() % 4);
      size_t x = a.allocate(bytes, align), y = b.allocate(bytes, align);
      ASSERT_EQ(x, y);
      if (x != Allocator::kNone) {
        EXPECT_EQ(x % align, 0u);
        live.push_back(x);
      }
    }
  }
  EXPECT_EQ(a.bytes_free(), b.bytes_free());
}

// A replacement PE's allocations are compared with the survivors' by fingerprint (pgas/resilient.h): equal
// after the same calls, different after one call more, a different size, or a free.
TEST(Allocator, FingerprintFollowsTheCalls) {
  Allocator a(1 << 20), b(1 << 20);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  const size_t x = a.allocate(1000, 64);
  b.allocate(1000, 64);
  a.allocate(64, 4096);
  b.allocate(64, 4096);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  Allocator c = b;
  c.allocate(64, 64);
  EXPECT_NE(c.fingerprint(), b.fingerprint());
  Allocator d(1 << 20);
  d.allocate(2000, 64);
  d.allocate(64, 4096);
  EXPECT_NE(d.fingerprint(), b.fingerprint()) << "the blocks' sizes differ";
  Allocator e = a;
  e.release(x);
  EXPECT_NE(e.fingerprint(), a.fingerprint());
  EXPECT_NE(Allocator(1 << 20).fingerprint(), Allocator(1 << 21).fingerprint()) << "the heaps' sizes differ";
}

}  // namespace
}  // namespace tessera::pgas
