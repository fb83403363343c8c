// The chunk loop of the staged algorithms (algos/common.h): chunks cover the payload exactly once, in
// order, and number their steps alike for every member whatever its own part of a v-variant payload.
#include <gtest/gtest.h>

#include <vector>

#include "coll/algos/common.h"

namespace tessera::coll::algos {
namespace {

TEST(Chunks, CoverThePayloadInOrderAndNumberTheSteps) {
  for (size_t total : {0, 1, 7, 8, 9, 64, 100})
    for (size_t per : {1, 3, 8, 64})
      for (uint64_t spc : {0, 1, 2, 5})
        for (uint64_t first : {0, 1}) {
          const Chunks chunks(total, per, spc, first);
          size_t next = 0, k = 0;
          for (const Chunk c : chunks) {
            EXPECT_EQ(c.begin, next);
            EXPECT_GE(c.count, 1u);
            EXPECT_LE(c.count, per);
            EXPECT_EQ(c.per, per);
            EXPECT_EQ(c.step, first + k * spc);
            next += c.count;
            ++k;
          }
          EXPECT_EQ(next, total);
          EXPECT_EQ(k, chunks.size());
          EXPECT_EQ(k, nchunks(total, per));
          EXPECT_EQ(chunks.steps(), first + k * spc);
        }
}

TEST(Chunks, PartIsAMembersShareOfTheChunk) {
  std::vector<Chunk> cs;
  for (const Chunk c : Chunks(10, 4)) cs.push_back(c);  // [0,4) [4,8) [8,10)
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].part(10), 4u);
  EXPECT_EQ(cs[2].part(10), 2u);
  EXPECT_EQ(cs[1].part(5), 1u);
  EXPECT_EQ(cs[1].part(4), 0u);  // that payload ends where the chunk starts
  EXPECT_EQ(cs[2].part(0), 0u);
  EXPECT_EQ(cs[0].part(100), 4u);  // at most a full chunk
}

}  // namespace
}  // namespace tessera::coll::algos
