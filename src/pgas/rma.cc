#include "pgas/rma.h"

#include <cstring>

#include "base/config.h"

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
// Calls copy(dest byte offset, source byte offset) for each of `nblocks` blocks at strides dst and sst.
template <typename Copy>
void each_block(size_t nblocks, ptrdiff_t dst, ptrdiff_t sst, size_t elem, Copy copy) {
  for (size_t i = 0; i < nblocks; ++i) copy(i * static_cast<size_t>(dst) * elem, i * static_cast<size_t>(sst) * elem);
}
void check_local(const char* routine, const void* p, ptrdiff_t stride, const char* what) {
  if (!p) fail_null(routine, what, 1);
  if (stride < 1) log::fatal("{}: {} stride {} must be at least 1", routine, what, stride);
}
}  // namespace

void ibput_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                 size_t nblocks, size_t elem, int pe) {
  if (nblocks == 0 || bsize == 0) {
    remote(routine, dest, 0, pe);
    return;
  }
  check_local(routine, src, sst, "source");
  char* d = strided_remote(routine, dest, dst, nblocks, elem, bsize, pe);
  const char* s = static_cast<const char*>(src);
  size_t run = bsize * elem;
  if (!d) {  // no mapping: one put per block through the transport
    const char* dsym = static_cast<const char*>(dest);
    each_block(nblocks, dst, sst, elem, [&](size_t o, size_t i) { routed_put(routine, dsym + o, s + i, run, pe); });
    return;
  }
  each_block(nblocks, dst, sst, elem, [&](size_t o, size_t i) { std::memcpy(d + o, s + i, run); });
  sync::notify_range(pe, watch_offset(dest), ((nblocks - 1) * static_cast<size_t>(dst) + bsize) * elem);
}

void ibget_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                 size_t nblocks, size_t elem, int pe) {
  if (nblocks == 0 || bsize == 0) {
    remote(routine, src, 0, pe);
    return;
  }
  check_local(routine, dest, dst, "destination");
  const char* s = strided_remote(routine, src, sst, nblocks, elem, bsize, pe);
  char* d = static_cast<char*>(dest);
  size_t run = bsize * elem;
  if (!s) {  // no mapping: one get per block through the transport
    const char* ssym = static_cast<const char*>(src);
    each_block(nblocks, dst, sst, elem, [&](size_t o, size_t i) { routed_get(routine, d + o, ssym + i, run, pe); });
    return;
  }
  each_block(nblocks, dst, sst, elem, [&](size_t o, size_t i) { std::memcpy(d + o, s + i, run); });
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
