// Atomic memory operations on symmetric objects of any PE of this host.
//
// An AMO is a std::atomic_ref on the peer's mapping of the object: one locked instruction, no message.
// Read-modify-write operations are sequentially consistent; fetch is an acquire load, set a release store.
// The object must be naturally aligned (a misaligned one ends the job with a message). After an operation
// that changes the target, sleeping waiters on that PE are woken. Thread-safe.
#pragma once
#include <atomic>
#include <cstdint>

#include "pgas/runtime.h"

namespace tessera::pgas {

[[noreturn]] void fail_misaligned(const char* routine, const void* addr, size_t align);

template <typename T>
inline std::atomic_ref<T> amo_ref(const char* routine, const T* sym, int pe) {
  T* p = reinterpret_cast<T*>(remote(routine, sym, sizeof(T), pe));
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T) != 0) [[unlikely]] fail_misaligned(routine, sym, sizeof(T));
  return std::atomic_ref<T>(*p);
}

template <typename T>
inline T atomic_fetch(const char* r, const T* sym, int pe) {
  return amo_ref(r, sym, pe).load(std::memory_order_acquire);
}
template <typename T>
inline void atomic_set(const char* r, T* sym, T v, int pe) {
  amo_ref(r, sym, pe).store(v, std::memory_order_release);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
}
template <typename T>
inline T atomic_swap(const char* r, T* sym, T v, int pe) {
  T old = amo_ref(r, sym, pe).exchange(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}
template <typename T>
inline T atomic_compare_swap(const char* r, T* sym, T cond, T v, int pe) {
  amo_ref(r, sym, pe).compare_exchange_strong(cond, v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return cond;  // the old value, whether or not the swap happened
}
template <typename T>
inline T atomic_fetch_add(const char* r, T* sym, T v, int pe) {
  T old = amo_ref(r, sym, pe).fetch_add(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}
template <typename T>
inline T atomic_fetch_and(const char* r, T* sym, T v, int pe) {
  T old = amo_ref(r, sym, pe).fetch_and(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}
template <typename T>
inline T atomic_fetch_or(const char* r, T* sym, T v, int pe) {
  T old = amo_ref(r, sym, pe).fetch_or(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}
template <typename T>
inline T atomic_fetch_xor(const char* r, T* sym, T v, int pe) {
  T old = amo_ref(r, sym, pe).fetch_xor(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}

}  // namespace tessera::pgas
