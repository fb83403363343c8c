// memcopy() copies exactly [dst, dst + n) for every size class and alignment of source and destination
// (its vector loop stores the first and last 128 bytes unaligned and the body aligned), and copy_aliases()
// flags the slow rep-movsb case. copy() and copy2() do the same with every kind of store, on both sides of
// the streaming thresholds, and in place.
#include "base/memcopy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace tessera {
namespace {

TEST(Memcopy, EverySizeClassAndAlignment) {
  const size_t sizes[] = {0, 1, 31, 127, 128, 129, 255, 2047, 2048, 2049, 4095, 4096, 4097, 65536 + 77, 300001};
  const size_t offsets[] = {0, 1, 8, 16, 31, 32, 63};
  constexpr size_t kGuard = 160;
  for (size_t n : sizes) {
    std::vector<unsigned char> src(n + 64), dst(n + 64 + 2 * kGuard);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (size_t so : offsets) {
      for (size_t d0 : offsets) {
        std::fill(dst.begin(), dst.end(), 0xA5);
        unsigned char* d = dst.data() + kGuard + d0;
        memcopy(d, src.data() + so, n);
        size_t wrong = 0;
        for (size_t i = 0; i < n; ++i) wrong += d[i] != src[so + i];
        ASSERT_EQ(wrong, 0u) << "size " << n << " src offset " << so << " dst offset " << d0;
        for (unsigned char* p = dst.data(); p < d; ++p) ASSERT_EQ(*p, 0xA5) << "wrote before dst, size " << n;
        for (unsigned char* p = d + n; p < dst.data() + dst.size(); ++p)
          ASSERT_EQ(*p, 0xA5) << "wrote past dst + " << n << " at +" << (p - d);
      }
    }
  }
}

TEST(Memcopy, AliasingWindowIsDestinationJustPastSourceModuloAPage) {
  alignas(4096) static char page[3 * 4096];
  EXPECT_FALSE(copy_aliases(page, page));
  EXPECT_FALSE(copy_aliases(page + 4096, page));  // same offset within a page
  EXPECT_TRUE(copy_aliases(page + 1, page));
  EXPECT_TRUE(copy_aliases(page + 16, page));      // a malloc'd buffer copied from a page-aligned slot
  EXPECT_TRUE(copy_aliases(page + 4096 + 31, page));
  EXPECT_FALSE(copy_aliases(page + 32, page));
  EXPECT_FALSE(copy_aliases(page, page + 16));     // destination behind the source
  EXPECT_TRUE(copy_aliases(page + 8, page + 4088));  // 8 - 4088 = 16 modulo a page
}

// A threshold for kAuto below kStreamCopyMin, restored afterwards, so that one test covers both sides of
// both thresholds with small buffers.
class AutoThreshold {
 public:
  explicit AutoThreshold(size_t bytes) : old_(copy_stream_min()) { set_copy_stream_min(bytes); }
  ~AutoThreshold() { set_copy_stream_min(old_); }

 private:
  size_t old_;
};

TEST(Copy, EveryKindOfStoreWritesExactlyTheDestination) {
  AutoThreshold at(4096);
  const size_t big = kStreamCopyMin + 300;
  std::vector<unsigned char> src(big + 64), dst(big + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t n : {size_t{0}, size_t{1}, size_t{127}, size_t{4095}, size_t{4096}, size_t{4097}, kStreamCopyMin - 1,
                   kStreamCopyMin, big}) {
    for (size_t off : {0, 1, 5, 31, 32, 33}) {
      for (Stores s : {Stores::kAuto, Stores::kCached, Stores::kStream}) {
        std::fill(dst.begin(), dst.end(), 0);
        copy(dst.data() + off, src.data() + 1, n, s);
        ASSERT_EQ(0, std::memcmp(dst.data() + off, src.data() + 1, n)) << n << " off " << off;
        if (off) {
          ASSERT_EQ(dst[off - 1], 0) << "wrote before dst";
        }
        ASSERT_EQ(dst[off + n], 0) << "wrote past dst";
      }
    }
  }
  // In place: nothing to do, nothing changed.
  std::vector<unsigned char> io(src.begin(), src.begin() + big);
  for (Stores s : {Stores::kAuto, Stores::kCached, Stores::kStream}) copy(io.data(), io.data(), big, s);
  EXPECT_EQ(0, std::memcmp(io.data(), src.data(), big));
}

TEST(Copy, StoresForAppliesTheAutoThresholdToTheWhole) {
  AutoThreshold at(size_t{1} << 20);
  EXPECT_EQ(stores_for((size_t{1} << 20) - 1), Stores::kCached);
  EXPECT_EQ(stores_for(size_t{1} << 20), Stores::kStream);
  set_copy_stream_min(0);  // 0 is read as 1: everything streams (where kStream does)
  EXPECT_EQ(copy_stream_min(), 1u);
}

TEST(Copy, DefaultAutoThresholdIsAQuarterOfTheCacheWithinBounds) {
  AutoThreshold at(1);
  g_copy_stream_min.store(0);  // not yet decided: computed on first use
  const size_t m = copy_stream_min();
  EXPECT_GE(m, size_t{1} << 20);
  EXPECT_LE(m, size_t{16} << 20);
}

// copy2: every offset of the streamed destination against 32-byte alignment, sizes around the 128-byte
// blocks and the 64 KiB threshold of the streamed path, and in place.
TEST(Copy, Copy2WritesBothDestinationsWhateverTheAlignment) {
  const size_t max = kStreamCopyMin + 300;
  std::vector<unsigned char> src(max + 64), dst(max + 64), cached(max + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{127}, size_t{4096}, kStreamCopyMin, max - 1, max}) {
    for (size_t off : {0, 1, 5, 31, 32, 33}) {
      for (Stores s : {Stores::kAuto, Stores::kCached, Stores::kStream}) {
        std::fill(dst.begin(), dst.end(), 0);
        std::fill(cached.begin(), cached.end(), 0);
        copy2(dst.data() + off, cached.data() + 3, src.data() + 1, bytes, s);
        ASSERT_EQ(0, std::memcmp(dst.data() + off, src.data() + 1, bytes)) << bytes << " off " << off;
        ASSERT_EQ(0, std::memcmp(cached.data() + 3, src.data() + 1, bytes)) << bytes << " off " << off;
        if (off) {
          ASSERT_EQ(dst[off - 1], 0) << "wrote before dst";
        }
        ASSERT_EQ(dst[off + bytes], 0) << "wrote past dst";
        ASSERT_EQ(cached[3 + bytes], 0) << "wrote past cached";
      }
    }
  }
  // In place: dst is the source, only the staging copy is made.
  std::vector<unsigned char> io(src.begin(), src.begin() + max);
  copy2(io.data(), cached.data(), io.data(), max, Stores::kStream);
  EXPECT_EQ(0, std::memcmp(io.data(), src.data(), max));
  EXPECT_EQ(0, std::memcmp(cached.data(), src.data(), max));
}

}  // namespace
}  // namespace tessera
