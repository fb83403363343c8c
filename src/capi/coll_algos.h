// The specification's collectives on the shared-memory path, for any Group (team or active set).
//
// Every PE maps every peer's symmetric memory, so no collective moves data through a bounce buffer:
//   broadcast   each member copies the root's source into its own dest;
//   collect     members publish their element counts, then each copies every member's source into its dest;
//   fcollect    as collect with equal counts (no publication);
//   alltoall(s) member i copies block i of every member's source into block j of its dest;
//   reduce      small (<= kSmallReduceBytes): each member reduces every element from all sources into a local
//               buffer, so the result is bit-identical everywhere; large: member i reduces its cache-line
//               aligned chunk from all sources and writes the result into every member's dest;
//   scan        member i sums sources 0..i (inclusive) or 0..i-1 (exclusive) into its dest.
// Each is bracketed by two barriers: the first says all members' sources and dests are ready, the second
// that nobody reads a source (or writes a dest) any more, so the caller may reuse both on return.
// Operands are always combined in member order 0..N-1, so floating-point results are identical on every
// member and repeatable from run to run.
// In place (dest == source) is allowed for reductions and scans, as the specification says.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "capi/coll_group.h"
#include "pgas/copy.h"

namespace tessera::capi::coll {

inline constexpr size_t kSmallReduceBytes = 4096;
inline constexpr size_t kBlockBytes = 4096;

// Table of one symmetric buffer's address on every member; inline storage for small groups.
template <typename T>
class Peers {
 public:
  Peers(const Group& g, T* sym, size_t bytes) : n_(g.size()) {
    if (n_ > kInline) heap_.resize(static_cast<size_t>(n_));
    T** p = data();
    for (int i = 0; i < n_; ++i) p[i] = g.at(sym, bytes, i);
  }
  T* operator[](int i) const { return const_cast<Peers*>(this)->data()[i]; }

 private:
  static constexpr int kInline = 64;
  T** data() { return n_ > kInline ? heap_.data() : inline_; }
  int n_;
  T* inline_[kInline];
  std::vector<T*> heap_;
};

[[noreturn]] void fail_root(const Group& g, int root);
[[noreturn]] void fail_stride(const Group& g, const char* what, ptrdiff_t stride);
// Reductions and scans take dest == source or disjoint buffers (specification); anything else is fatal.
void check_same_or_disjoint(const Group& g, const void* dest, const void* source, size_t bytes);

// ---- Data movement (bytes) ----
void broadcast(Group& g, void* dest, const void* source, size_t bytes, int root, bool update_root);
void collect(Group& g, void* dest, const void* source, size_t my_bytes);
void fcollect(Group& g, void* dest, const void* source, size_t bytes);
void alltoall(Group& g, void* dest, const void* source, size_t block_bytes);
void alltoalls(Group& g, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
               size_t elem);

// ---- Reductions ----
struct OpAnd { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct OpOr { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct OpXor { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };
struct OpMax { template <typename T> T operator()(T a, T b) const { return a < b ? b : a; } };
struct OpMin { template <typename T> T operator()(T a, T b) const { return b < a ? b : a; } };
struct OpSum { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a + b); } };
struct OpProd { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a * b); } };

// out[k] = op over members j in [0, nsrc) of srcs[j][lo + k], for k < n.
template <typename T, typename Op>
inline void combine(T* out, const Peers<const T>& srcs, int nsrc, size_t lo, size_t n, Op op) {
  const T* s0 = srcs[0] + lo;
  for (size_t k = 0; k < n; ++k) out[k] = s0[k];
  for (int j = 1; j < nsrc; ++j) {
    const T* s = srcs[j] + lo;
    for (size_t k = 0; k < n; ++k) out[k] = op(out[k], s[k]);
  }
}

template <typename T, typename Op>
void reduce(Group& g, T* dest, const T* source, size_t n, Op op) {
  const size_t bytes = checked_extent(g.routine(), dest, source, n, sizeof(T));
  if (n == 0) return;  // every member passes the same count
  check_same_or_disjoint(g, dest, source, bytes);
  Peers<const T> srcs(g, source, bytes);
  Peers<T> dsts(g, dest, bytes);
  const int N = g.size();
  constexpr size_t kBlock = kBlockBytes / sizeof(T);
  g.barrier();  // every source is ready, every dest may be written
  if (bytes <= kSmallReduceBytes) {
    // Everyone computes the whole result; dest is written after the second barrier (sources may be dests).
    T buf[kSmallReduceBytes / sizeof(T)];
    combine(buf, srcs, N, 0, n, op);
    g.barrier();
    std::memcpy(dest, buf, bytes);
  } else {
    // Member i owns elements [lo, hi): chunks are whole cache lines so members never share a line.
    constexpr size_t kLine = sizeof(T) >= 64 ? 1 : 64 / sizeof(T);
    size_t chunk = (n + static_cast<size_t>(N) - 1) / static_cast<size_t>(N);
    chunk = (chunk + kLine - 1) / kLine * kLine;
    const size_t lo = std::min(n, chunk * static_cast<size_t>(g.me()));
    const size_t hi = std::min(n, lo + chunk);
    T buf[kBlock];
    for (size_t b = lo; b < hi; b += kBlock) {
      const size_t m = std::min(kBlock, hi - b);
      combine(buf, srcs, N, b, m, op);
      // Step: push the reduced block into every member's dest, starting with the next member.
      for (int j = 0; j < N; ++j) {
        int to = (g.me() + 1 + j) % N;
        memcopy(dsts[to] + b, buf, m * sizeof(T));
      }
    }
    g.barrier();
  }
  g.finish();
}

// 1.6 scans: dest on member i = sum of sources of members 0..i (inclusive) or 0..i-1 (exclusive; member 0
// gets zeros).
template <typename T>
void scan(Group& g, T* dest, const T* source, size_t n, bool inclusive) {
  const size_t bytes = checked_extent(g.routine(), dest, source, n, sizeof(T));
  if (n == 0) return;
  check_same_or_disjoint(g, dest, source, bytes);
  Peers<const T> srcs(g, source, bytes);
  (void)g.at(dest, bytes, g.me());
  const int upto = inclusive ? g.me() + 1 : g.me();
  g.barrier();
  // In place, the source must stay intact until every member has read it: stage the result.
  std::vector<T> staged(dest == source ? n : 0);
  T* out = dest == source ? staged.data() : dest;
  if (upto == 0) {
    std::fill(out, out + n, T{});
  } else {
    combine(out, srcs, upto, 0, n, OpSum{});
  }
  g.barrier();
  if (dest == source) memcopy(dest, staged.data(), bytes);
  g.finish();
}

}  // namespace tessera::capi::coll
