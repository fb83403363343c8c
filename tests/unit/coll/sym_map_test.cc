// SymMap (coll/comm.h): how the engine's in-place algorithms find a member's copy of a symmetric object.
// word() must accept exactly the ranges inside this PE's heap or data segment (a range running past either
// end is not symmetric: the call then takes the staged algorithm, or the in-place row ends the job), and
// at() must land at the same offset in the member's mapping of the same segment, or give null when that
// member is not mapped.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "coll/comm.h"

namespace tessera::coll {
namespace {

struct Fixture {
  std::vector<char> heap0 = std::vector<char>(4096), heap1 = std::vector<char>(4096);
  std::vector<char> data0 = std::vector<char>(256), data1 = std::vector<char>(256);
  SymMap map;
  Fixture() {
    map.my_heap = heap0.data();
    map.heap_bytes = heap0.size();
    map.my_data = data0.data();
    map.data_bytes = data0.size();
    map.heap = {heap0.data(), heap1.data(), nullptr};
    map.data = {data0.data(), data1.data(), nullptr};
  }
};

TEST(SymMap, HeapRangesMapToTheSameOffsetOnEveryMappedMember) {
  Fixture f;
  for (size_t off : {size_t{0}, size_t{8}, size_t{4000}}) {
    const uint64_t w = f.map.word(f.heap0.data() + off, 96);
    ASSERT_EQ(w, off + 1) << off;
    EXPECT_EQ(f.map.at(0, w), f.heap0.data() + off);
    EXPECT_EQ(f.map.at(1, w), f.heap1.data() + off);
    EXPECT_EQ(f.map.at(2, w), nullptr) << "member 2 is not mapped";
  }
}

TEST(SymMap, DataRangesFollowTheHeapInTheOffsetSpace) {
  Fixture f;
  const uint64_t w = f.map.word(f.data0.data() + 16, 32);
  ASSERT_EQ(w, f.heap0.size() + 16 + 1);
  EXPECT_EQ(f.map.at(1, w), f.data1.data() + 16);
  EXPECT_EQ(f.map.at(2, w), nullptr);
}

TEST(SymMap, RangesReachingPastASegmentAreNotSymmetric) {
  Fixture f;
  EXPECT_EQ(f.map.word(f.heap0.data() + 4000, 97), 0u) << "one byte past the heap";
  EXPECT_NE(f.map.word(f.heap0.data() + 4000, 96), 0u) << "ends at the heap's last byte";
  EXPECT_EQ(f.map.word(f.data0.data() + 255, 2), 0u) << "one byte past the data segment";
  EXPECT_EQ(f.map.word(f.heap0.data() - 1, 1), 0u) << "one byte before the heap";
  EXPECT_EQ(f.map.word(f.heap0.data(), SIZE_MAX), 0u) << "a length that wraps";
  EXPECT_EQ(f.map.word(nullptr, 8), 0u);
  std::vector<char> other(64);
  EXPECT_EQ(f.map.word(other.data(), 8), 0u) << "private memory";
}

TEST(SymMap, ZeroBytesCountAsOneAndAJobWithoutSymmetricGlobalsHasNoDataSegment) {
  Fixture f;
  EXPECT_EQ(f.map.word(f.heap0.data() + 4095, 0), 4096u);
  EXPECT_EQ(f.map.word(f.heap0.data() + 4096, 0), 0u) << "the end of the heap is outside it";
  f.map.my_data = nullptr;
  f.map.data_bytes = 0;
  EXPECT_EQ(f.map.word(f.data0.data(), 8), 0u);
}

}  // namespace
}  // namespace tessera::coll
