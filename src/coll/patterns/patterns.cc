#include "coll/patterns/patterns.h"

namespace tessera::coll::patterns {

Range slice(size_t count, int parts, int i, size_t align) {
  if (align == 0) align = 1;
  size_t units = (count + align - 1) / align;  // aligned units, the last maybe partial
  size_t per = units / static_cast<size_t>(parts), rem = units % static_cast<size_t>(parts);
  auto start = [&](int k) {
    size_t u = per * static_cast<size_t>(k) + (static_cast<size_t>(k) < rem ? static_cast<size_t>(k) : rem);
    size_t e = u * align;
    return e < count ? e : count;
  };
  return Range{start(i), start(i + 1)};
}

Rhd rhd_plan(int n) {
  Rhd p;
  p.n = n;
  p.p2 = 1;
  while (p.p2 * 2 <= n) p.p2 *= 2;
  p.extra = n - p.p2;
  p.levels = 0;
  while ((1 << p.levels) < p.p2) ++p.levels;
  return p;
}
int rhd_vrank(const Rhd& p, int r) {
  if (r < 2 * p.extra) return (r & 1) ? r / 2 : -1;
  return r - p.extra;
}
int rhd_real(const Rhd& p, int v) { return v < p.extra ? 2 * v + 1 : v + p.extra; }
int rhd_fold_partner(const Rhd& p, int r) { return r < 2 * p.extra ? (r ^ 1) : -1; }
int rhd_partner(const Rhd& p, int v, int level) { return v ^ (p.p2 >> (level + 1)); }
void rhd_range(const Rhd& p, int v, int levels_done, int* lo, int* hi) {
  int l = 0, h = p.p2;
  for (int level = 0; level < levels_done; ++level) {
    int half = (h - l) / 2;
    if (v & (p.p2 >> (level + 1))) l += half;
    else h -= half;
  }
  *lo = l;
  *hi = h;
}

TreeNode btree(int n, int r) {
  TreeNode t;
  if (n <= 1) return t;
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1;
  if (r == 0) {
    // Root: its only child is the highest power of two below n.
    int top = 1;
    while (top * 2 < n) top *= 2;
    t.child[0] = top;
    return t;
  }
  int up = (r ^ bit) | (bit << 1);
  if (up >= n) up = r ^ bit;
  t.parent = up;
  int low = bit >> 1;
  if (low) {
    t.child[0] = r - low;
    int d1 = r + low;
    while (low && d1 >= n) {
      low >>= 1;
      d1 = r + low;
    }
    t.child[1] = low ? d1 : -1;
  }
  return t;
}

TreeNode dtree(int n, int tree, int r) {
  if (tree == 0) return btree(n, r);
  auto m = [n](int x) { return x < 0 ? -1 : n - 1 - x; };
  TreeNode t = btree(n, m(r));
  t.parent = m(t.parent);
  t.child[0] = m(t.child[0]);
  t.child[1] = m(t.child[1]);
  return t;
}
int tree_root(int n, int tree) { return tree == 0 ? 0 : n - 1; }

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

std::vector<int> bruck_a2a_blocks(int k, int n) {
  std::vector<int> b;
  for (int j = 0; j < n; ++j)
    if (j & (1 << k)) b.push_back(j);
  return b;
}

}  // namespace tessera::coll::patterns
