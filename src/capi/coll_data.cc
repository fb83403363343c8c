// Data-movement collectives over a Group: broadcast, collect, fcollect, alltoall, alltoalls (coll_algos.h).
#include <cstring>

#include "capi/coll_algos.h"

namespace tessera::capi::coll {

void fail_root(const Group& g, int root) {
  log::fatal("{}: PE_root {} is out of range: the collective has {} PEs (0..{})", g.routine(), root, g.size(),
             g.size() - 1);
}

void fail_stride(const Group& g, const char* what, ptrdiff_t stride) {
  log::fatal("{}: {} {} must be at least 1", g.routine(), what, stride);
}

void check_same_or_disjoint(const Group& g, const void* dest, const void* source, size_t bytes) {
  auto d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(source);
  if (d != s && d < s + bytes && s < d + bytes)
    log::fatal("{}: dest {} and source {} overlap partially ({} bytes each); they must be the same buffer or "
               "disjoint", g.routine(), dest, source, bytes);
}

namespace {
// Bytes spanned by `nelems` elements of `elem` bytes `stride` elements apart, or a fatal overflow message.
size_t strided_extent(const Group& g, size_t nelems, ptrdiff_t stride, size_t elem) {
  if (nelems == 0) return 0;
  size_t span, bytes;
  if (__builtin_mul_overflow(nelems - 1, static_cast<size_t>(stride), &span) ||
      __builtin_add_overflow(span, size_t{1}, &span) || __builtin_mul_overflow(span, elem, &bytes))
    log::fatal("{}: {} elements {} apart of {} bytes overflow the address space (limit {} bytes)", g.routine(),
               nelems, stride, elem, SIZE_MAX);
  return bytes;
}

template <typename E>
void strided_copy(char* dst, ptrdiff_t dstride, const char* src, ptrdiff_t sstride, size_t n) {
  E* d = reinterpret_cast<E*>(dst);
  const E* s = reinterpret_cast<const E*>(src);
  for (size_t k = 0; k < n; ++k) std::memcpy(d + k * dstride, s + k * sstride, sizeof(E));
}
struct Bytes16 {
  char b[16];
};
}  // namespace

void broadcast(Group& g, void* dest, const void* source, size_t bytes, int root, bool update_root) {
  if (root < 0 || root >= g.size()) fail_root(g, root);
  if (bytes == 0) return;  // every member passes the same count
  char* mine = g.at(static_cast<char*>(dest), bytes, g.me());
  const char* from = g.at(static_cast<const char*>(source), bytes, root);
  g.barrier();  // the root's source is ready
  if (g.me() != root || (update_root && mine != from)) pgas::copy_bytes(mine, from, bytes);
  g.barrier();  // nobody reads the root's source any more
  g.finish();
}

void collect(Group& g, void* dest, const void* source, size_t my_bytes) {
  (void)g.at(static_cast<const char*>(source), my_bytes, g.me());
  g.publish(my_bytes);
  g.barrier();
  const int N = g.size();
  size_t total = 0;
  for (int j = 0; j < N; ++j) {
    if (__builtin_add_overflow(total, static_cast<size_t>(g.peer_value(j)), &total))
      log::fatal("{}: the members' element counts add up to more than {} bytes", g.routine(), SIZE_MAX);
  }
  if (total && !dest) pgas::fail_null(g.routine(), "dest", total);
  char* out = total ? g.at(static_cast<char*>(dest), total, g.me()) : nullptr;
  size_t off = 0;
  for (int j = 0; j < N; ++j) {
    size_t b = g.peer_value(j);
    if (b) pgas::copy_bytes(out + off, g.at(static_cast<const char*>(source), b, j), b);
    off += b;
  }
  g.barrier();
  g.finish();
}

void fcollect(Group& g, void* dest, const void* source, size_t bytes) {
  if (bytes == 0) return;
  const int N = g.size();
  size_t total = pgas::checked_bytes(g.routine(), bytes, static_cast<size_t>(N));
  char* out = g.at(static_cast<char*>(dest), total, g.me());
  Peers<const char> srcs(g, static_cast<const char*>(source), bytes);
  g.barrier();
  for (int k = 0; k < N; ++k) {
    int j = (g.me() + k) % N;  // start with our own block: peers start with theirs, spreading the reads
    pgas::copy_bytes(out + static_cast<size_t>(j) * bytes, srcs[j], bytes);
  }
  g.barrier();
  g.finish();
}

void alltoall(Group& g, void* dest, const void* source, size_t block) {
  if (block == 0) return;
  const int N = g.size();
  size_t total = pgas::checked_bytes(g.routine(), block, static_cast<size_t>(N));
  char* out = g.at(static_cast<char*>(dest), total, g.me());
  Peers<const char> srcs(g, static_cast<const char*>(source), total);
  const size_t my_off = static_cast<size_t>(g.me()) * block;
  g.barrier();
  for (int k = 0; k < N; ++k) {
    int j = (g.me() + k) % N;
    pgas::copy_bytes(out + static_cast<size_t>(j) * block, srcs[j] + my_off, block);
  }
  g.barrier();
  g.finish();
}

void alltoalls(Group& g, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
               size_t elem) {
  if (dst < 1) fail_stride(g, "dst", dst);
  if (sst < 1) fail_stride(g, "sst", sst);
  if (nelems == 0) return;
  const int N = g.size();
  const size_t all = pgas::checked_bytes(g.routine(), nelems, static_cast<size_t>(N));
  char* out = g.at(static_cast<char*>(dest), strided_extent(g, all, dst, elem), g.me());
  Peers<const char> srcs(g, static_cast<const char*>(source), strided_extent(g, all, sst, elem));
  g.barrier();
  for (int k = 0; k < N; ++k) {
    int j = (g.me() + k) % N;
    // Element e of block j of dest comes from element e of block me of member j's source.
    char* d = out + static_cast<size_t>(j) * nelems * static_cast<size_t>(dst) * elem;
    const char* s = srcs[j] + static_cast<size_t>(g.me()) * nelems * static_cast<size_t>(sst) * elem;
    switch (elem) {
      case 1: strided_copy<uint8_t>(d, dst, s, sst, nelems); break;
      case 2: strided_copy<uint16_t>(d, dst, s, sst, nelems); break;
      case 4: strided_copy<uint32_t>(d, dst, s, sst, nelems); break;
      case 8: strided_copy<uint64_t>(d, dst, s, sst, nelems); break;
      case 16: strided_copy<Bytes16>(d, dst, s, sst, nelems); break;
      default:
        for (size_t e = 0; e < nelems; ++e)
          std::memcpy(d + e * static_cast<size_t>(dst) * elem, s + e * static_cast<size_t>(sst) * elem, elem);
    }
  }
  g.barrier();
  g.finish();
}

}  // namespace tessera::capi::coll
