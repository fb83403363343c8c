// The checks on headers that peers on other hosts send (transport/ucx/wire.h): every field a sender controls
// is tried at and past its limit, and no sum of offset and length may wrap around to pass.
#include "transport/ucx/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>
#include <string>
#include <cstring>
#include <limits>

namespace tessera::transport::ucx {
namespace {

constexpr uint64_t kHeap = 1 << 20, kData = 4096;
constexpr Segments kSegs{kHeap, kData};
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr int32_t kLastOp = 7;

TEST(Wire, RangesEndAtEachSegment) {
  EXPECT_TRUE(symmetric_range(0, kHeap, kHeap, kData));
  EXPECT_FALSE(symmetric_range(0, kHeap + 1, kHeap, kData));  // would run from the heap into the data segment
  EXPECT_TRUE(symmetric_range(kHeap - 8, 8, kHeap, kData));
  EXPECT_FALSE(symmetric_range(kHeap - 8, 9, kHeap, kData));
  EXPECT_TRUE(symmetric_range(kHeap, kData, kHeap, kData));
  EXPECT_TRUE(symmetric_range(kHeap + kData, 0, kHeap, kData));  // an empty put at the very end
  EXPECT_FALSE(symmetric_range(kHeap + kData, 1, kHeap, kData));
  EXPECT_FALSE(symmetric_range(kHeap + kData + 1, 0, kHeap, kData));
  EXPECT_TRUE(symmetric_range(kHeap, 0, kHeap, 0));  // no data segment: only the empty range at its start
  EXPECT_FALSE(symmetric_range(kHeap, 1, kHeap, 0));
}

TEST(Wire, RangesDoNotWrap) {
  EXPECT_FALSE(symmetric_range(8, kMax, kHeap, kData));
  EXPECT_FALSE(symmetric_range(kMax, 2, kHeap, kData));
  EXPECT_FALSE(symmetric_range(kHeap + 16, kMax - 8, kHeap, kData));
}

TEST(Wire, PutsAreCheckedByEveryField) {
  EXPECT_EQ(put_error(64, 128, 128, -1, 0, kSegs), "");
  EXPECT_EQ(put_error(64, 128, 128, 1, kHeap + 8, kSegs), "");
  EXPECT_NE(put_error(64, 128, 127, -1, 0, kSegs).find("carries 127"), std::string::npos);
  EXPECT_NE(put_error(kHeap - 64, 128, 128, -1, 0, kSegs).find("outside this PE's heap"), std::string::npos);
  EXPECT_NE(put_error(64, kMax, kMax, -1, 0, kSegs), "");
  EXPECT_NE(put_error(64, 8, 8, 2, 0, kSegs).find("signal operator 2"), std::string::npos);
  EXPECT_NE(put_error(64, 8, 8, -2, 0, kSegs), "");
  EXPECT_NE(put_error(64, 8, 8, 0, 12, kSegs).find("signal word"), std::string::npos);       // unaligned
  EXPECT_NE(put_error(64, 8, 8, 1, kHeap + kData, kSegs).find("signal word"), std::string::npos);  // past the end
  EXPECT_EQ(put_error(64, 8, 8, -1, kMax, kSegs), "");  // no signal: its offset is not read
}

TEST(Wire, GetsStayInside) {
  EXPECT_EQ(get_error(0, kHeap, kSegs), "");
  EXPECT_NE(get_error(kHeap, kData + 1, kSegs).find("a get of 4097 bytes"), std::string::npos);
  EXPECT_NE(get_error(kMax - 4, 8, kSegs), "");
}

TEST(Wire, AtomicsNeedAKnownOperatorOnAnAlignedWord) {
  for (int32_t op = 0; op <= kLastOp; ++op) EXPECT_EQ(atomic_error(8, 8, op, kLastOp, kSegs), "") << op;
  EXPECT_EQ(atomic_error(4, 4, 0, kLastOp, kSegs), "");
  EXPECT_NE(atomic_error(8, 8, kLastOp + 1, kLastOp, kSegs).find("operator 8"), std::string::npos);
  EXPECT_NE(atomic_error(8, 8, -1, kLastOp, kSegs), "");
  EXPECT_NE(atomic_error(8, 2, 0, kLastOp, kSegs).find("2 bytes"), std::string::npos);
  EXPECT_NE(atomic_error(4, 8, 0, kLastOp, kSegs).find("aligned"), std::string::npos);
  EXPECT_NE(atomic_error(kHeap + kData, 8, 0, kLastOp, kSegs), "");
  EXPECT_NE(atomic_error(kHeap + kData - 4, 8, 0, kLastOp, kSegs), "");
}

// A session's batch of puts (rma.cc): entries of {offset, length} and their bytes padded to 8.
class Batch {
 public:
  Batch& put(uint64_t off, uint64_t bytes, uint64_t carried) {
    const BatchEntry e{off, bytes};
    const size_t at = buf_.size();
    buf_.resize(at + sizeof e + batch_padded(carried));
    std::memcpy(buf_.data() + at, &e, sizeof e);
    ++puts_;
    return *this;
  }
  std::string error(uint64_t puts_said = ~uint64_t{0}, size_t extra = 0) {
    std::vector<char> b = buf_;
    b.resize(b.size() + extra);
    return batch_error(b.data(), b.size(), puts_said == ~uint64_t{0} ? puts_ : puts_said, kSegs);
  }

 private:
  std::vector<char> buf_;
  uint64_t puts_ = 0;
};

TEST(Wire, BatchesOfPuts) {
  EXPECT_EQ(Batch().error(), "");  // an empty batch
  EXPECT_EQ(Batch().put(0, 8, 8).put(kHeap - 3, 3, 3).put(kHeap, kData, kData).put(64, 0, 0).error(), "");
  EXPECT_NE(Batch().put(kHeap - 3, 4, 4).error().find("outside this PE's heap"), std::string::npos);
  EXPECT_NE(Batch().put(kHeap + kData, 1, 1).error().find("outside"), std::string::npos);
  EXPECT_NE(Batch().put(0, 16, 8).error().find("says 16 bytes where 8 are left"), std::string::npos);
  EXPECT_NE(Batch().put(0, kMax, 8).error().find("where 8 are left"), std::string::npos);  // no padding wrap
  EXPECT_NE(Batch().put(0, 8, 8).error(2).find("end inside entry 1"), std::string::npos);  // fewer than said
  EXPECT_NE(Batch().put(0, 8, 8).put(8, 8, 8).error(1).find("beyond them"), std::string::npos);
  EXPECT_NE(Batch().put(0, 8, 8).error(~uint64_t{0}, 8).find("8 bytes beyond"), std::string::npos);
}

}  // namespace
}  // namespace tessera::transport::ucx
