// Rank arithmetic of the collective algorithms: pure functions of (rank, step, size), no data movement, no
// runtime. Every function is tested exhaustively for small sizes (tests/unit/coll/patterns_test.cc).
// Conventions: ranks are 0..n-1 of a communicator; "mod" is the non-negative remainder.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::coll::patterns {

inline int mod(int a, int n) { return ((a % n) + n) % n; }

// ---- Partition: element ranges of `parts` slices of `count` elements, slice starts multiple of `align`
// (except that the last slice takes the rest). Slices may be empty. Covers [0, count) exactly once.
struct Range {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};
Range slice(size_t count, int parts, int i, size_t align);

// ---- Ring (pull form), used by ring reduce-scatter/allreduce/allgather.
// Prologue: rank r publishes its own block r. Reduce-scatter step s (0..n-2): rank r reads its left
// neighbour's partial of block ring_rs_block(r, s, n), adds its own contribution and publishes it. After
// n-1 steps rank r holds the full reduction of ring_owned_block(r, n). Allgather step k (0..n-2): rank r
// reads from its left neighbour the final block ring_ag_block(r, k, n) and republishes it.
inline int ring_left(int r, int n) { return mod(r - 1, n); }
inline int ring_right(int r, int n) { return mod(r + 1, n); }
inline int ring_rs_block(int r, int s, int n) { return mod(r - 1 - s, n); }
inline int ring_owned_block(int r, int n) { return mod(r + 1, n); }
inline int ring_ag_block(int r, int k, int n) { return mod(r - k, n); }

// ---- Recursive halving-doubling (Rabenseifner) with non-power-of-two folding.
// p2 = largest power of two <= n, extra = n - p2. Ranks 2i and 2i+1 (i < extra) fold: the even one hands its
// data to the odd one and sits out (it gets the result at the end). Active ranks get virtual ranks
// 0..p2-1. Level l (0..log2(p2)-1) of the halving uses distance p2 >> (l+1); a virtual rank with that bit
// set keeps the upper half of its current block range. After the halving, virtual rank v owns block v (of
// p2 blocks); the doubling retraces the levels in reverse order.
struct Rhd {
  int n = 1, p2 = 1, extra = 0, levels = 0;
};
Rhd rhd_plan(int n);
int rhd_vrank(const Rhd& p, int r);      // -1 for a folded-out rank
int rhd_real(const Rhd& p, int v);       // real rank of virtual rank v
int rhd_fold_partner(const Rhd& p, int r);  // partner in the fold (r^1 when r < 2*extra), else -1
int rhd_partner(const Rhd& p, int v, int level);  // virtual partner at halving level
// Blocks [lo, hi) held by virtual rank v after `levels_done` halving levels (0 -> [0, p2)).
void rhd_range(const Rhd& p, int v, int levels_done, int* lo, int* hi);

// ---- Binary trees (NCCL's double binary tree). btree: an in-order-like tree over 0..n-1 where each rank's
// parent is found from its lowest set bit; the root is 0, with one child. dtree(t=1) mirrors the ranks
// (n-1-r) so that, for even n, ranks that are leaves in tree 0 are interior in tree 1.
struct TreeNode {
  int parent = -1;
  int child[2] = {-1, -1};
};
TreeNode btree(int n, int r);
TreeNode dtree(int n, int tree, int r);
int tree_root(int n, int tree);

// ---- Bruck. Allgather step k (0..ceil(log2 n)-1): rank r reads from bruck_ag_peer the first
// bruck_ag_count blocks of that peer's rotated accumulation and appends them to its own.
int ceil_log2(int n);
inline int bruck_ag_peer(int r, int k, int n) { return mod(r + (1 << k), n); }
inline int bruck_ag_count(int k, int n) { return (1 << k) < n - (1 << k) ? (1 << k) : n - (1 << k); }
// Alltoall step k: rank r reads from bruck_a2a_peer the blocks j (rotated index) with bit k set.
inline int bruck_a2a_peer(int r, int k, int n) { return mod(r - (1 << k), n); }
std::vector<int> bruck_a2a_blocks(int k, int n);

// ---- Pairwise exchange: at step k (1..n-1) rank r serves rank r+k and pulls from rank r-k.
inline int pairwise_to(int r, int k, int n) { return mod(r + k, n); }
inline int pairwise_from(int r, int k, int n) { return mod(r - k, n); }

}  // namespace tessera::coll::patterns
