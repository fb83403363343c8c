#include "pgas/rma.h"

#include <cstring>

#include "base/config.h"
#include "base/memcopy.h"

namespace tessera::pgas {

namespace {
// Checks that the strided range [p, p + ((n-1)*stride + 1)*elem) is symmetric on `pe`; returns its base there.
char* strided_remote(const char* routine, const void* p, ptrdiff_t stride, size_t nelems, size_t elem,
                     size_t run, int pe) {
  if (stride < 1) log::fatal("{}: stride {} must be at least 1", routine, stride);
  size_t span;
  if (__builtin_mul_overflow(nelems - 1, static_cast<size_t>(stride), &span) ||
      __builtin_add_overflow(span, run, &span) || __builtin_mul_overflow(span, elem, &span))
    log::fatal("{}: {} elements at stride {} overflow the address space", routine, nelems, stride);
  return remote(routine, p, span, pe);
}
void check_local(const char* routine, const void* p, ptrdiff_t stride, const char* what) {
  if (!p) fail_null(routine, what, 1);
  if (stride < 1) log::fatal("{}: {} stride {} must be at least 1", routine, what, stride);
}

// Blocked strided transfer, one body for both directions: the remote side is dest for a put (kPut), src
// for a get. Each of the `nblocks` blocks of `bsize` elements is copied in place when the PE's memory is
// mapped, else moved through the transport; a put then wakes the PE's waiters on the range it wrote.
template <bool kPut>
void blocked(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
             size_t nblocks, size_t elem, int pe) {
  const void* sym = kPut ? static_cast<const void*>(dest) : src;
  if (nblocks == 0 || bsize == 0) {
    remote(routine, sym, 0, pe);
    return;
  }
  if constexpr (kPut) check_local(routine, src, sst, "source");
  else check_local(routine, dest, dst, "destination");
  char* mapped = strided_remote(routine, sym, kPut ? dst : sst, nblocks, elem, bsize, pe);
  char* d = static_cast<char*>(dest);
  const char* s = static_cast<const char*>(src);
  const size_t run = bsize * elem;
  auto each_block = [&](auto copy) {
    for (size_t i = 0; i < nblocks; ++i)
      copy(i * static_cast<size_t>(dst) * elem, i * static_cast<size_t>(sst) * elem);
  };
  if (!mapped) {  // no mapping: one transfer per block through the transport, at the symmetric addresses
    if constexpr (kPut) each_block([&](size_t o, size_t i) { routed_put(routine, d + o, s + i, run, pe); });
    else each_block([&](size_t o, size_t i) { routed_get(routine, d + o, s + i, run, pe); });
    return;
  }
  if constexpr (kPut) d = mapped;
  else s = mapped;
  each_block([&](size_t o, size_t i) { memcopy(d + o, s + i, run); });
  if constexpr (kPut)
    sync::notify_range(pe, watch_offset(dest), ((nblocks - 1) * static_cast<size_t>(dst) + bsize) * elem);
}
}  // namespace

void ibput_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                 size_t nblocks, size_t elem, int pe) {
  blocked<true>(routine, dest, src, dst, sst, bsize, nblocks, elem, pe);
}
void ibget_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                 size_t nblocks, size_t elem, int pe) {
  blocked<false>(routine, dest, src, dst, sst, bsize, nblocks, elem, pe);
}

void iput_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                size_t elem, int pe) {
  ibput_bytes(routine, dest, src, dst, sst, 1, nelems, elem, pe);
}
void iget_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                size_t elem, int pe) {
  ibget_bytes(routine, dest, src, dst, sst, 1, nelems, elem, pe);
}

}  // namespace tessera::pgas
