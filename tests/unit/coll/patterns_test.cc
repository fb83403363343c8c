// Exhaustive checks of the rank arithmetic (src/coll/patterns) for 1..64 ranks: every block reduced with
// every contribution exactly once, every piece delivered, trees that are trees.
#include "coll/patterns/patterns.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace tessera::coll::patterns {
namespace {

TEST(Slice, CoversExactlyOnceAndAligns) {
  for (size_t count : {0, 1, 5, 16, 17, 100, 1000, 4097})
    for (int parts = 1; parts <= 9; ++parts)
      for (size_t align : {1, 4, 16}) {
        size_t next = 0;
        for (int i = 0; i < parts; ++i) {
          Range r = slice(count, parts, i, align);
          EXPECT_EQ(r.begin, next);
          EXPECT_LE(r.begin, r.end);
          if (r.begin < count) { EXPECT_EQ(r.begin % align, 0u); }
          next = r.end;
        }
        EXPECT_EQ(next, count);
      }
}

// Simulates the ring reduce-scatter: the set of contributions in each published partial.
TEST(Ring, ReduceScatterThenAllgatherDeliversEverything) {
  for (int n = 1; n <= 16; ++n) {
    // partial[r] = (block, contributors) that rank r published last
    std::vector<std::pair<int, std::set<int>>> pub(n);
    for (int r = 0; r < n; ++r) pub[r] = {r, {r}};
    for (int s = 0; s < n - 1; ++s) {
      std::vector<std::pair<int, std::set<int>>> next(n);
      for (int r = 0; r < n; ++r) {
        auto in = pub[ring_left(r, n)];
        ASSERT_EQ(in.first, ring_rs_block(r, s, n)) << "n " << n << " r " << r << " s " << s;
        EXPECT_FALSE(in.second.count(r));
        in.second.insert(r);
        next[r] = in;
      }
      pub = next;
    }
    for (int r = 0; r < n && n > 1; ++r) {
      EXPECT_EQ(pub[r].first, ring_owned_block(r, n));
      EXPECT_EQ(static_cast<int>(pub[r].second.size()), n);
    }
    // allgather: each rank ends with every block
    for (int r = 0; r < n; ++r) {
      std::set<int> have{ring_owned_block(r, n)};
      for (int k = 0; k < n - 1; ++k) {
        int b = ring_ag_block(r, k, n);
        // the left neighbour has it after k steps
        EXPECT_EQ(b, k == 0 ? ring_owned_block(ring_left(r, n), n) : ring_ag_block(ring_left(r, n), k - 1, n));
        have.insert(b);
      }
      EXPECT_EQ(static_cast<int>(have.size()), n);
    }
  }
}

TEST(Rhd, FoldHalvingDoublingCoverEveryRankAndBlock) {
  for (int n = 1; n <= 64; ++n) {
    Rhd p = rhd_plan(n);
    EXPECT_EQ(p.p2 + p.extra, n);
    EXPECT_LE(p.p2, n);
    EXPECT_GT(2 * p.p2, n);
    std::set<int> vr;
    for (int r = 0; r < n; ++r) {
      int v = rhd_vrank(p, r);
      if (v < 0) {
        EXPECT_LT(r, 2 * p.extra);
        EXPECT_EQ(rhd_fold_partner(p, r), r + 1);
        continue;
      }
      EXPECT_EQ(rhd_real(p, v), r);
      vr.insert(v);
    }
    EXPECT_EQ(static_cast<int>(vr.size()), p.p2);
    // contributions per block after the halving: virtual rank v owns block v with all p2 contributions
    std::vector<std::vector<std::set<int>>> have(p.p2, std::vector<std::set<int>>(p.p2));
    for (int v = 0; v < p.p2; ++v)
      for (int b = 0; b < p.p2; ++b) have[v][b] = {v};
    for (int l = 0; l < p.levels; ++l) {
      auto next = have;
      for (int v = 0; v < p.p2; ++v) {
        int pv = rhd_partner(p, v, l);
        EXPECT_EQ(rhd_partner(p, pv, l), v);
        int lo, hi;
        rhd_range(p, v, l + 1, &lo, &hi);
        int plo, phi;
        rhd_range(p, pv, l + 1, &plo, &phi);
        EXPECT_TRUE(hi <= plo || phi <= lo);  // partners keep disjoint halves
        for (int b = lo; b < hi; ++b)
          for (int c : have[pv][b]) next[v][b].insert(c);
      }
      have = next;
    }
    for (int v = 0; v < p.p2; ++v) {
      int lo, hi;
      rhd_range(p, v, p.levels, &lo, &hi);
      EXPECT_EQ(lo, v);
      EXPECT_EQ(hi, v + 1);
      EXPECT_EQ(static_cast<int>(have[v][v].size()), p.p2);
    }
  }
}

TEST(Trees, DoubleBinaryTreesAreTreesWithConsistentLinks) {
  for (int n = 1; n <= 64; ++n)
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        TreeNode x = dtree(n, t, r);
        if (x.parent < 0) {
          ++roots;
          EXPECT_EQ(r, tree_root(n, t));
        } else {
          ASSERT_GE(x.parent, 0);
          ASSERT_LT(x.parent, n);
          TreeNode p = dtree(n, t, x.parent);
          EXPECT_TRUE(p.child[0] == r || p.child[1] == r) << "n " << n << " tree " << t << " rank " << r;
        }
        for (int c : x.child)
          if (c >= 0) {
            ASSERT_LT(c, n);
            EXPECT_EQ(dtree(n, t, c).parent, r);
          }
        // every rank reaches the root
        int hops = 0;
        for (int y = r; y != tree_root(n, t); y = dtree(n, t, y).parent) ASSERT_LT(++hops, n);
      }
      EXPECT_EQ(roots, 1);
    }
}

TEST(Trees, EvenSizesMakeLeavesInteriorInTheOtherTree) {
  for (int n = 2; n <= 64; n += 2) {
    int both_interior = 0;
    for (int r = 0; r < n; ++r) {
      bool in0 = dtree(n, 0, r).child[0] >= 0, in1 = dtree(n, 1, r).child[0] >= 0;
      both_interior += in0 && in1;
    }
    EXPECT_LE(both_interior, 1) << n;
  }
}

TEST(Bruck, AllgatherStepsCollectEveryPieceOnce) {
  for (int n = 1; n <= 40; ++n)
    for (int r = 0; r < n; ++r) {
      // accumulation of member q after step k: pieces q, q+1, ..., q+have-1
      int have = 1;
      for (int k = 0; k < ceil_log2(n); ++k) {
        int take = bruck_ag_count(k, n);
        EXPECT_LE(take, have);  // the peer holds at least as many as we take
        have += take;
      }
      EXPECT_EQ(have, n);
    }
}

TEST(Bruck, AlltoallRoutesEveryPieceToItsDestination) {
  for (int n = 1; n <= 40; ++n) {
    // tmp[r][j] = (source, destination) of the piece rank r holds at rotated index j
    std::vector<std::vector<std::pair<int, int>>> tmp(n, std::vector<std::pair<int, int>>(n));
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < n; ++j) tmp[r][j] = {r, mod(r + j, n)};
    for (int k = 0; k < ceil_log2(n); ++k) {
      auto next = tmp;
      for (int r = 0; r < n; ++r)
        for (int j : bruck_a2a_blocks(k, n)) next[r][j] = tmp[bruck_a2a_peer(r, k, n)][j];
      tmp = next;
    }
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < n; ++j) {
        EXPECT_EQ(tmp[r][j].second, r);
        EXPECT_EQ(tmp[r][j].first, mod(r - j, n));
      }
  }
}

TEST(Pairwise, EveryPairOnce) {
  for (int n = 1; n <= 20; ++n)
    for (int r = 0; r < n; ++r) {
      std::set<int> to, from;
      for (int k = 1; k < n; ++k) {
        to.insert(pairwise_to(r, k, n));
        from.insert(pairwise_from(r, k, n));
        EXPECT_EQ(pairwise_from(pairwise_to(r, k, n), k, n), r);
      }
      EXPECT_EQ(static_cast<int>(to.size()), n - 1);
      EXPECT_FALSE(to.count(r));
      EXPECT_EQ(to, from);
    }
}

}  // namespace
}  // namespace tessera::coll::patterns
