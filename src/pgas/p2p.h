// Point-to-point synchronisation: waiting on local symmetric variables that peers update, and signals.
//
// wait_until blocks (spin -> yield -> futex, with the TESSERA_TIMEOUT deadline: sync/wait.h) until the
// comparison holds; test returns at once. The variable is read with acquire loads, so data a peer put
// before updating it (with fence or put-with-signal in between) is visible once the wait returns.
// Signals are 64-bit words: put_signal copies the data, then (release) sets or adds the signal, so a PE
// that sees the signal sees the data; to a peer without a mapping the transport's put_signal does the same.
// Thread-safe.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "pgas/amo.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"
#include "sync/where.h"

namespace tessera::pgas {

// Same numbering as SHMEM_CMP_* in shmem.h (pinned by static_asserts in capi/p2p.cc).
enum Cmp : int { kEq = 0, kNe = 1, kGt = 2, kGe = 3, kLt = 4, kLe = 5 };
// Signal operations (SHMEM_SIGNAL_SET / _ADD), as transports take them.
using transport::kSignalAdd;
using transport::kSignalSet;

const char* cmp_name(int cmp);
[[noreturn]] void fail_bad_cmp(const char* routine, int cmp);

template <typename T>
inline bool compare(T a, int cmp, T b) {
  switch (cmp) {
    case kEq: return a == b;
    case kNe: return a != b;
    case kGt: return a > b;
    case kGe: return a >= b;
    case kLt: return a < b;
    case kLe: return a <= b;
  }
  return false;
}

template <typename T>
inline T load_acquire(const T* p) {
  return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_acquire);
}

// The local variable must be symmetric (peers have to be able to update it).
template <typename T>
inline void check_wait_var(const char* routine, const T* ivar, int cmp) {
  if (static_cast<unsigned>(cmp) > kLe) [[unlikely]] fail_bad_cmp(routine, cmp);
  if (!is_symmetric(ivar, sizeof(T))) [[unlikely]] fail_bad_addr(routine, ivar, sizeof(T));
}

template <typename T>
std::string describe_wait(const char* routine, const T* ivar, int cmp, T value) {
  return fmt::format("{}: *{} (symmetric offset {:#x}) {} {}, value seen {}", routine,
                     static_cast<const void*>(ivar), watch_offset(ivar), cmp_name(cmp), value, load_acquire(ivar));
}

template <typename T>
inline void wait_until(const char* routine, const T* ivar, int cmp, T value) {
  check_wait_var(routine, ivar, cmp);
  sync::WhereScope where(sync::Call::kWaitUntil, 0, 0, watch_offset(ivar));
  sync::wait_until([&] { return compare(load_acquire(ivar), cmp, value); },
                   [&] { return describe_wait(routine, ivar, cmp, value); }, watch_of(ivar, sizeof(T)));
}

template <typename T>
inline bool test(const char* routine, const T* ivar, int cmp, T value) {
  check_wait_var(routine, ivar, cmp);
  return compare(load_acquire(ivar), cmp, value);
}

// put + signal: data first, then the signal with release ordering.
inline void put_signal(const char* routine, void* dest, const void* src, size_t bytes, uint64_t* sig_addr,
                       uint64_t signal, int sig_op, int pe) {
  char* d = remote(routine, dest, bytes, pe);
  uint64_t* s = amo_addr(routine, sig_addr, pe);
  if (!d || !s) [[unlikely]] return routed_put_signal(routine, dest, src, bytes, sig_addr, signal, sig_op, pe);
  if (bytes) {
    if (!src) [[unlikely]] fail_null(routine, "source", bytes);
    copy_bytes(d, src, bytes);
  }
  std::atomic_ref<uint64_t> sig(*s);
  if (sig_op == kSignalSet) {
    sig.store(signal, std::memory_order_release);
  } else if (sig_op == kSignalAdd) {
    sig.fetch_add(signal, std::memory_order_acq_rel);
  } else [[unlikely]] {
    fail_bad_signal_op(routine, sig_op);
  }
  // Waiters watch the signal (or, rarely, the data): wake those whose range meets either.
  uint64_t so = watch_offset(sig_addr), doff = watch_offset(dest);
  uint64_t lo = std::min(so, doff), hi = std::max(so + sizeof(uint64_t), doff + bytes);
  sync::notify_range(pe, lo, hi - lo);
}

inline uint64_t signal_fetch(const char* routine, const uint64_t* sig_addr) {
  return amo_ref(routine, sig_addr, rt().my_pe).load(std::memory_order_acquire);
}

inline uint64_t signal_wait_until(const char* routine, uint64_t* sig_addr, int cmp, uint64_t value) {
  wait_until(routine, sig_addr, cmp, value);
  return load_acquire(sig_addr);
}

}  // namespace tessera::pgas
