// Tessera's C++ API over the same core as the OpenSHMEM C API.
//
//   tessera::Runtime rt;                              // shmem_init; finalize when rt goes out of scope
//   auto buf = tessera::symmetric<double>(1024);      // collective, typed, freed collectively
//   tessera::put(buf.data(), local.data(), 1024, (rt.my_pe() + 1) % rt.n_pes());
//   tessera::quiet();
//   long old = tessera::atomic_fetch_add(counter.data(), 1L, 0);
//
// Semantics are those of the C API (shmem.h): puts/gets/atomics to PEs of this host complete on return;
// fence orders, quiet completes; every blocking call has a deadline (TESSERA_TIMEOUT). A PE out of range,
// a remote address outside symmetric memory or an element count that overflows throws tessera::Error
// naming the C++ call, the value and the limit; other bad arguments end the job with such a message. All
// functions are thread-safe.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <shmem.h>
#include <tessera/coll.hpp>
#include <tessera/error.hpp>
#include <tessera/kernel.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace tessera {

/// tessera::Error (error.hpp) is thrown by the C++ API where it reports errors instead of ending the job
/// (allocation failure).

/// RAII: initialises the PE on construction (collective), finalizes on destruction (collective).
class Runtime {
 public:
  Runtime() { shmem_init(); }
  ~Runtime() { shmem_finalize(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  int my_pe() const { return shmem_my_pe(); }
  int n_pes() const { return shmem_n_pes(); }
  void barrier() const { shmem_barrier_all(); }
};

/// A typed symmetric allocation (collective: every PE must create and destroy it in the same order).
template <typename T>
class Symmetric {
  static_assert(std::is_trivially_copyable_v<T>, "symmetric objects are copied bytewise");

 public:
  Symmetric() = default;
  explicit Symmetric(size_t count, bool zero = false) : n_(count) {
    p_ = static_cast<T*>(zero ? shmem_calloc(count ? count : 1, sizeof(T)) : shmem_malloc(bytes_or_throw(count)));
    if (!p_) throw Error("tessera::symmetric: cannot allocate " + std::to_string(count) + " elements of " +
                         std::to_string(sizeof(T)) + " bytes (raise SHMEM_SYMMETRIC_SIZE)");
  }
  ~Symmetric() { reset(); }
  Symmetric(Symmetric&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  Symmetric& operator=(Symmetric&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  void reset() {
    if (p_) shmem_free(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* data() const { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) const { return p_[i]; }
  std::span<T> span() const { return {p_, n_}; }
  /// Pointer to the same object on PE `pe` (loads and stores go straight to its memory).
  T* on(int pe) const { return static_cast<T*>(shmem_ptr(p_, pe)); }

 private:
  static size_t bytes_or_throw(size_t count) {
    size_t b;
    if (__builtin_mul_overflow(count, sizeof(T), &b))
      throw Error("tessera::symmetric: " + std::to_string(count) + " elements overflow size_t");
    return b;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
Symmetric<T> symmetric(size_t count) {
  return Symmetric<T>(count);
}
template <typename T>
Symmetric<T> symmetric_zeroed(size_t count) {
  return Symmetric<T>(count, true);
}

// ---- RMA (typed; counts in elements) ----
/// A PE out of range or a remote address outside symmetric memory throws tessera::Error naming the C++ call
/// (one library call with the runtime's bounds at hand: small beside the put itself).
namespace detail {
// Throws tessera::Error naming `call` when `pe` is out of range or `addr` is not symmetric (libtessera: one
// call, the same bounds the C routines check).
void check_remote(const char* call, const void* addr, int pe);
template <typename T>
size_t bytes_of(const char* call, size_t count) {
  size_t b;
  if (__builtin_mul_overflow(count, sizeof(T), &b))
    throw Error(std::string(call) + ": " + std::to_string(count) + " elements of " + std::to_string(sizeof(T)) +
                " bytes overflow size_t");
  return b;
}
}  // namespace detail

template <typename T>
void put(T* dest, const T* src, size_t count, int pe) {
  const size_t b = detail::bytes_of<T>("tessera::put", count);
  detail::check_remote("tessera::put", dest, pe);
  shmem_putmem(dest, src, b, pe);
}
template <typename T>
void get(T* dest, const T* src, size_t count, int pe) {
  const size_t b = detail::bytes_of<T>("tessera::get", count);
  detail::check_remote("tessera::get", src, pe);
  shmem_getmem(dest, src, b, pe);
}
template <typename T>
void p(T* dest, const T& value, int pe) {
  detail::check_remote("tessera::p", dest, pe);
  shmem_putmem(dest, &value, sizeof(T), pe);
}
template <typename T>
T g(const T* src, int pe) {
  detail::check_remote("tessera::g", src, pe);
  T v;
  shmem_getmem(&v, src, sizeof(T), pe);
  return v;
}
/// Data then signal (SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD); a PE that sees the signal sees the data.
template <typename T>
void put_signal(T* dest, const T* src, size_t count, uint64_t* signal, uint64_t value, int op, int pe) {
  const size_t b = detail::bytes_of<T>("tessera::put_signal", count);
  detail::check_remote("tessera::put_signal", dest, pe);
  detail::check_remote("tessera::put_signal", signal, pe);
  shmem_putmem_signal(dest, src, b, signal, value, op, pe);
}
inline uint64_t signal_wait_until(uint64_t* signal, int cmp, uint64_t value) {
  return shmem_signal_wait_until(signal, cmp, value);
}

inline void fence() { shmem_fence(); }
inline void quiet() { shmem_quiet(); }
inline void barrier_all() { shmem_barrier_all(); }
inline void sync_all() { shmem_sync_all(); }

// ---- Atomics (32/64-bit integers; fetch/set/swap also for float/double) ----
namespace detail {
template <typename T>
constexpr bool kAmoInt = std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8);
}

#define TESSERA_CPP_AMO(T, N)                                                                              \
  inline T atomic_fetch(const T* s, int pe) {                                                              \
    detail::check_remote("tessera::atomic_fetch", s, pe);                                                 \
    return shmem_##N##_atomic_fetch(s, pe);                                                               \
  }                                                                                                        \
  inline void atomic_set(T* d, T v, int pe) {                                                              \
    detail::check_remote("tessera::atomic_set", d, pe);                                                   \
    shmem_##N##_atomic_set(d, v, pe);                                                                     \
  }                                                                                                        \
  inline T atomic_swap(T* d, T v, int pe) {                                                                \
    detail::check_remote("tessera::atomic_swap", d, pe);                                                  \
    return shmem_##N##_atomic_swap(d, v, pe);                                                             \
  }
/// One overload per distinct C++ type (int32_t, size_t... are aliases of these).
TESSERA_CPP_AMO(int, int)
TESSERA_CPP_AMO(long, long)
TESSERA_CPP_AMO(long long, longlong)
TESSERA_CPP_AMO(unsigned int, uint)
TESSERA_CPP_AMO(unsigned long, ulong)
TESSERA_CPP_AMO(unsigned long long, ulonglong)
TESSERA_CPP_AMO(float, float)
TESSERA_CPP_AMO(double, double)
#undef TESSERA_CPP_AMO
#define TESSERA_CPP_AMO(T, N)                                                                              \
  inline T atomic_compare_swap(T* d, T c, T v, int pe) {                                                   \
    detail::check_remote("tessera::atomic_compare_swap", d, pe);                                          \
    return shmem_##N##_atomic_compare_swap(d, c, v, pe);                                                  \
  }                                                                                                        \
  inline T atomic_fetch_inc(T* d, int pe) {                                                                \
    detail::check_remote("tessera::atomic_fetch_inc", d, pe);                                             \
    return shmem_##N##_atomic_fetch_inc(d, pe);                                                           \
  }                                                                                                        \
  inline void atomic_inc(T* d, int pe) {                                                                   \
    detail::check_remote("tessera::atomic_inc", d, pe);                                                   \
    shmem_##N##_atomic_inc(d, pe);                                                                        \
  }                                                                                                        \
  inline T atomic_fetch_add(T* d, T v, int pe) {                                                           \
    detail::check_remote("tessera::atomic_fetch_add", d, pe);                                             \
    return shmem_##N##_atomic_fetch_add(d, v, pe);                                                        \
  }                                                                                                        \
  inline void atomic_add(T* d, T v, int pe) {                                                              \
    detail::check_remote("tessera::atomic_add", d, pe);                                                   \
    shmem_##N##_atomic_add(d, v, pe);                                                                     \
  }
TESSERA_CPP_AMO(int, int)
TESSERA_CPP_AMO(long, long)
TESSERA_CPP_AMO(long long, longlong)
TESSERA_CPP_AMO(unsigned int, uint)
TESSERA_CPP_AMO(unsigned long, ulong)
TESSERA_CPP_AMO(unsigned long long, ulonglong)
#undef TESSERA_CPP_AMO
#define TESSERA_CPP_AMO(T, N)                                                                              \
  inline T atomic_fetch_and(T* d, T v, int pe) {                                                           \
    detail::check_remote("tessera::atomic_fetch_and", d, pe);                                             \
    return shmem_##N##_atomic_fetch_and(d, v, pe);                                                        \
  }                                                                                                        \
  inline T atomic_fetch_or(T* d, T v, int pe) {                                                            \
    detail::check_remote("tessera::atomic_fetch_or", d, pe);                                              \
    return shmem_##N##_atomic_fetch_or(d, v, pe);                                                         \
  }                                                                                                        \
  inline T atomic_fetch_xor(T* d, T v, int pe) {                                                           \
    detail::check_remote("tessera::atomic_fetch_xor", d, pe);                                             \
    return shmem_##N##_atomic_fetch_xor(d, v, pe);                                                        \
  }
TESSERA_CPP_AMO(unsigned int, uint)
TESSERA_CPP_AMO(unsigned long, ulong)
TESSERA_CPP_AMO(unsigned long long, ulonglong)
#undef TESSERA_CPP_AMO

// ---- Waiting (on local symmetric variables) ----
#define TESSERA_CPP_WAIT(T, N)                                                                             \
  inline void wait_until(T* ivar, int cmp, T v) { shmem_##N##_wait_until(ivar, cmp, v); }                 \
  inline bool test(T* ivar, int cmp, T v) { return shmem_##N##_test(ivar, cmp, v) != 0; }
TESSERA_CPP_WAIT(int, int)
TESSERA_CPP_WAIT(long, long)
TESSERA_CPP_WAIT(long long, longlong)
TESSERA_CPP_WAIT(unsigned int, uint)
TESSERA_CPP_WAIT(unsigned long, ulong)
TESSERA_CPP_WAIT(unsigned long long, ulonglong)
#undef TESSERA_CPP_WAIT

// ---- Teams ----
class Team {
 public:
  static Team world() { return Team(SHMEM_TEAM_WORLD, false); }
  static Team shared() { return Team(SHMEM_TEAM_SHARED, false); }
  Team(Team&& o) noexcept : t_(std::exchange(o.t_, SHMEM_TEAM_INVALID)), owned_(o.owned_) {}
  Team& operator=(Team&&) = delete;
  ~Team() {
    if (owned_ && t_ != SHMEM_TEAM_INVALID) shmem_team_destroy(t_);
  }
  /// Collective over this team; PEs outside the new team get an invalid Team (valid() false).
  Team split_strided(int start, int stride, int size) const {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (shmem_team_split_strided(t_, start, stride, size, nullptr, 0, &t) != 0)
      throw Error("tessera::Team::split_strided: invalid arguments (see the message above)");
    return Team(t, true);
  }
  bool valid() const { return t_ != SHMEM_TEAM_INVALID; }
  int my_pe() const { return shmem_team_my_pe(t_); }
  int n_pes() const { return shmem_team_n_pes(t_); }
  int translate(int pe, const Team& to) const { return shmem_team_translate_pe(t_, pe, to.t_); }
  void sync() const { shmem_team_sync(t_); }
  shmem_team_t handle() const { return t_; }

 private:
  Team(shmem_team_t t, bool owned) : t_(t), owned_(owned) {}
  shmem_team_t t_;
  bool owned_;
};

}  // namespace tessera
