// memcopy() copies exactly [dst, dst + n) for every size class and alignment of source and destination
// (its vector loop stores the first and last 128 bytes unaligned and the body aligned), and copy_aliases()
// flags the slow rep-movsb case.
#include "base/memcopy.h"

#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
}  // namespace tessera
