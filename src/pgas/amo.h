// Atomic memory operations on symmetric objects of any PE.
//
// On a peer of this host an AMO is a std::atomic_ref on the peer's mapping of the object: one locked
// instruction, no message. A peer without a mapping (another host) is reached through its transport's
// atomic function (peers.h), with the same semantics on 4- and 8-byte objects.
// Read-modify-write operations are sequentially consistent; fetch is an acquire load, set a release store.
// The object must be naturally aligned (a misaligned one ends the job with a message). After an operation
// that changes the target, sleeping waiters on that PE are woken. Thread-safe.
#pragma once
#include <atomic>
#include <bit>
#include <cstdint>

#include "pgas/peers.h"
#include "pgas/runtime.h"

namespace tessera::pgas {

[[noreturn]] void fail_misaligned(const char* routine, const void* addr, size_t align);
[[noreturn]] void fail_no_mapping(const char* routine, int pe);

// The address of `sym` in pe's mapping, checked for alignment; null when pe has no mapping.
template <typename T>
inline T* amo_addr(const char* routine, const T* sym, int pe) {
  T* p = reinterpret_cast<T*>(remote(routine, sym, sizeof(T), pe));
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T) != 0) [[unlikely]] fail_misaligned(routine, sym, sizeof(T));
  return p;
}

// For callers that need a load/store path (locks, own signals): a peer without a mapping ends the job.
template <typename T>
inline std::atomic_ref<T> amo_ref(const char* routine, const T* sym, int pe) {
  T* p = amo_addr(routine, sym, pe);
  if (!p) [[unlikely]] fail_no_mapping(routine, pe);
  return std::atomic_ref<T>(*p);
}

// The operation through pe's transport, on the bits of T.
template <typename T>
T routed_amo(const char* routine, const T* sym, transport::AtomicOp op, T value, T cond, int pe) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "transports implement atomics on 4 and 8 bytes");
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const uint64_t old = routed_atomic(routine, sym, sizeof(T), op, std::bit_cast<Bits>(value),
                                     std::bit_cast<Bits>(cond), pe);
  return std::bit_cast<T>(static_cast<Bits>(old));
}

template <typename T>
inline T atomic_fetch(const char* r, const T* sym, int pe) {
  T* p = amo_addr(r, sym, pe);
  if (!p) [[unlikely]] return routed_amo(r, sym, transport::AtomicOp::kFetch, T{}, T{}, pe);
  return std::atomic_ref<T>(*p).load(std::memory_order_acquire);
}
template <typename T>
inline void atomic_set(const char* r, T* sym, T v, int pe) {
  T* p = amo_addr(r, sym, pe);
  if (!p) [[unlikely]] {
    routed_amo(r, sym, transport::AtomicOp::kSet, v, T{}, pe);
    return;
  }
  std::atomic_ref<T>(*p).store(v, std::memory_order_release);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
}
template <typename T>
inline T atomic_swap(const char* r, T* sym, T v, int pe) {
  T* p = amo_addr(r, sym, pe);
  if (!p) [[unlikely]] return routed_amo(r, sym, transport::AtomicOp::kSwap, v, T{}, pe);
  T old = std::atomic_ref<T>(*p).exchange(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}
template <typename T>
inline T atomic_compare_swap(const char* r, T* sym, T cond, T v, int pe) {
  T* p = amo_addr(r, sym, pe);
  if (!p) [[unlikely]] return routed_amo(r, sym, transport::AtomicOp::kCompareSwap, v, cond, pe);
  std::atomic_ref<T>(*p).compare_exchange_strong(cond, v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return cond;  // the old value, whether or not the swap happened
}

// fetch-add/and/or/xor: one body, the operation chosen at compile time (the C API's bitwise routines name
// their AtomicOp; fetch-add, which signals and counters use too, has a name of its own).
template <transport::AtomicOp Op, typename T>
inline T atomic_fetch_op(const char* r, T* sym, T v, int pe) {
  T* p = amo_addr(r, sym, pe);
  if (!p) [[unlikely]] return routed_amo(r, sym, Op, v, T{}, pe);
  std::atomic_ref<T> a(*p);
  T old;
  if constexpr (Op == transport::AtomicOp::kFetchAdd) old = a.fetch_add(v, std::memory_order_seq_cst);
  else if constexpr (Op == transport::AtomicOp::kFetchAnd) old = a.fetch_and(v, std::memory_order_seq_cst);
  else if constexpr (Op == transport::AtomicOp::kFetchOr) old = a.fetch_or(v, std::memory_order_seq_cst);
  else old = a.fetch_xor(v, std::memory_order_seq_cst);
  sync::notify_range(pe, watch_offset(sym), sizeof(T));
  return old;
}
template <typename T>
inline T atomic_fetch_add(const char* r, T* sym, T v, int pe) {
  return atomic_fetch_op<transport::AtomicOp::kFetchAdd>(r, sym, v, pe);
}

}  // namespace tessera::pgas
