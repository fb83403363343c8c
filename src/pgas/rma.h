// One-sided put and get on symmetric memory.
//
// On a peer of this host a put is a copy into the peer's mapping of the destination (no message, no
// syscall), a get a copy out of it. A peer without a mapping (another host) is reached through its
// transport's put/get (peers.h): blocking, except a large non-blocking put where the transport has a
// non-blocking form (completed at the next fence/quiet). A large one is shared with the copy engine's thread (copy_engine.h):
// a blocking call's copy is done when it returns; a non-blocking one completes at the next fence/quiet
// (order.h).
// After a put, waiters on the target PE that went to sleep are woken (sync::notify: one relaxed load when
// nobody sleeps).
// Arguments: dest (put) or source (get) must be symmetric; the local buffer may be any memory; a null
// pointer with a non-zero size, a PE out of range or an address outside symmetric memory ends the job with
// a message naming the routine, the value and the limit. Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>

#include "pgas/copy.h"
#include "pgas/copy_engine.h"
#include "pgas/peers.h"
#include "pgas/runtime.h"

namespace tessera::pgas {

inline void put_bytes(const char* routine, void* dest, const void* src, size_t bytes, int pe) {
  char* d = remote(routine, dest, bytes, pe);
  if (!d) [[unlikely]] return routed_put(routine, dest, src, bytes, pe);
  if (bytes == 0) return;
  if (!src) [[unlikely]] fail_null(routine, "source", bytes);
  if (engine::takes(bytes)) [[unlikely]] {
    engine::copy(d, static_cast<const char*>(src), bytes, pe, watch_offset(dest));
    return;
  }
  copy_bytes(d, src, bytes);
  sync::notify_range(pe, watch_offset(dest), bytes);
}

inline void get_bytes(const char* routine, void* dest, const void* src, size_t bytes, int pe) {
  const char* s = remote(routine, src, bytes, pe);
  if (!s) [[unlikely]] return routed_get(routine, dest, src, bytes, pe);
  if (bytes == 0) return;
  if (!dest) [[unlikely]] fail_null(routine, "destination", bytes);
  if (engine::takes(bytes)) [[unlikely]] {
    engine::copy(static_cast<char*>(dest), s, bytes, -1, 0);
    return;
  }
  copy_bytes(dest, s, bytes);
}

// Non-blocking forms: a large transfer is shared with the copy engine (copy_engine.h) and may still be in
// flight when the call returns; fence/quiet complete it. Smaller ones are done at once, like put_bytes.
inline void put_nbi_bytes(const char* routine, void* dest, const void* src, size_t bytes, int pe) {
  char* d = remote(routine, dest, bytes, pe);
  if (!d) [[unlikely]] return routed_put_nbi(routine, dest, src, bytes, pe);
  if (bytes == 0) return;
  if (!src) [[unlikely]] fail_null(routine, "source", bytes);
  if (engine::takes(bytes)) [[unlikely]] {
    engine::submit(d, static_cast<const char*>(src), bytes, pe, watch_offset(dest));
    return;
  }
  copy_bytes(d, src, bytes);
  sync::notify_range(pe, watch_offset(dest), bytes);
}

inline void get_nbi_bytes(const char* routine, void* dest, const void* src, size_t bytes, int pe) {
  if (!engine::takes(bytes)) [[likely]] {
    get_bytes(routine, dest, src, bytes, pe);
    return;
  }
  const char* s = remote(routine, src, bytes, pe);
  if (!s) [[unlikely]] return routed_get(routine, dest, src, bytes, pe);
  if (!dest) [[unlikely]] fail_null(routine, "destination", bytes);
  engine::submit(static_cast<char*>(dest), s, bytes, -1, 0);
}

// Single element: one store / load of T.
// The routed put takes the value by copy, out of line: p() itself never takes its address, so the value
// stays in a register on the store path.
template <typename T>
[[gnu::noinline, gnu::cold]] void routed_p(const char* routine, T* dest, T value, int pe) {
  routed_put(routine, dest, &value, sizeof(T), pe);
}
template <typename T>
inline void p(const char* routine, T* dest, T value, int pe) {
  T* d = reinterpret_cast<T*>(remote(routine, dest, sizeof(T), pe));
  if (!d) [[unlikely]] return routed_p(routine, dest, value, pe);
  std::memcpy(d, &value, sizeof(T));
  sync::notify_range(pe, watch_offset(dest), sizeof(T));
}
template <typename T>
inline T g(const char* routine, const T* src, int pe) {
  const T* s = reinterpret_cast<const T*>(remote(routine, src, sizeof(T), pe));
  T v;
  if (!s) [[unlikely]] {
    routed_get(routine, &v, src, sizeof(T), pe);
    return v;
  }
  std::memcpy(&v, s, sizeof(T));
  return v;
}

// Strided: element i goes from src[i*sst] to dest[i*dst] (strides in elements of `elem` bytes).
void iput_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                size_t elem, int pe);
void iget_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                size_t elem, int pe);
// Blocked strided (1.6 ibput/ibget): `nblocks` blocks of `bsize` elements.
void ibput_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                 size_t nblocks, size_t elem, int pe);
void ibget_bytes(const char* routine, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                 size_t nblocks, size_t elem, int pe);

// Byte count of `nelems` elements of `elem` bytes, or a fatal error naming the overflow.
inline size_t checked_bytes(const char* routine, size_t nelems, size_t elem) {
  size_t b;
  if (__builtin_mul_overflow(nelems, elem, &b)) [[unlikely]] {
    log::fatal("{}: {} elements of {} bytes overflow the address space (limit {} bytes)", routine, nelems, elem,
               SIZE_MAX);
  }
  return b;
}

}  // namespace tessera::pgas
