// Point-to-point synchronisation of the C API: wait_until/test and their _all/_any/_some/_vector forms.
#include <vector>

#include "capi/handles.h"
#include "pgas/p2p.h"

using namespace tessera;

// The comparisons pass from the C API to pgas as they are: pgas::Cmp numbers them as shmem.h does, which the
// layers below capi do not include, so the numbering is pinned here, where the values are handed down.
static_assert(pgas::kEq == SHMEM_CMP_EQ && pgas::kNe == SHMEM_CMP_NE && pgas::kGt == SHMEM_CMP_GT &&
                  pgas::kGe == SHMEM_CMP_GE && pgas::kLt == SHMEM_CMP_LT && pgas::kLe == SHMEM_CMP_LE,
              "pgas::Cmp differs from SHMEM_CMP_*");

namespace {
// Index set semantics of the specification: status[i] != 0 excludes ivars[i]; a null status includes all.
inline bool active(const int* status, size_t i) { return !status || status[i] == 0; }

template <typename T>
void check_ivars(const char* routine, const T* ivars, size_t n, int cmp) {
  if (n == 0) return;
  if (!ivars) pgas::fail_null(routine, "ivars", n * sizeof(T));
  pgas::check_wait_var(routine, ivars, cmp);
  pgas::check_wait_var(routine, ivars + (n - 1), cmp);
}

template <typename T, typename V>
bool all_satisfied(const T* ivars, size_t n, const int* status, int cmp, V vals) {
  for (size_t i = 0; i < n; ++i)
    if (active(status, i) && !pgas::compare(pgas::load_acquire(ivars + i), cmp, vals(i))) return false;
  return true;
}
// Where the next _any scan of the same array starts: just after the index the last one returned, so that a
// caller collecting ready indices in a loop (test_any until SIZE_MAX) is handed every ready index in turn
// instead of the first one forever. Per thread, as each thread scans on its own.
struct AnyCursor {
  const void* ivars = nullptr;
  size_t next = 0;
};
thread_local AnyCursor t_any_cursor;

template <typename T, typename V>
size_t first_satisfied(const T* ivars, size_t n, const int* status, int cmp, V vals) {
  AnyCursor& c = t_any_cursor;
  const size_t start = c.ivars == ivars && c.next < n ? c.next : 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = start + k < n ? start + k : start + k - n;
    if (active(status, i) && pgas::compare(pgas::load_acquire(ivars + i), cmp, vals(i))) {
      c = {ivars, i + 1};
      return i;
    }
  }
  return SIZE_MAX;
}
template <typename T, typename V>
size_t collect_satisfied(const T* ivars, size_t n, size_t* indices, const int* status, int cmp, V vals) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (active(status, i) && pgas::compare(pgas::load_acquire(ivars + i), cmp, vals(i))) indices[k++] = i;
  return k;
}
bool any_active(const int* status, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (active(status, i)) return true;
  return false;
}

template <typename T, typename V>
std::string describe_set(const char* routine, const T* ivars, size_t n, int cmp, V vals) {
  std::string s = fmt::format("{}: {} variables at {} (symmetric offset {:#x}) {} ", routine, n,
                              static_cast<const void*>(ivars), pgas::watch_offset(ivars), pgas::cmp_name(cmp));
  for (size_t i = 0; i < n && i < 8; ++i)
    s += fmt::format("{}[{}]: seen {} want {}", i ? ", " : "", i, pgas::load_acquire(ivars + i), vals(i));
  return s;
}

template <typename T, typename V>
void wait_all(const char* routine, const T* ivars, size_t n, const int* status, int cmp, V vals) {
  check_ivars(routine, ivars, n, cmp);
  sync::wait_until([&] { return all_satisfied(ivars, n, status, cmp, vals); },
                   [&] { return describe_set(routine, ivars, n, cmp, vals); }, pgas::watch_of(ivars, n * sizeof(T)));
}
template <typename T, typename V>
size_t wait_any(const char* routine, const T* ivars, size_t n, const int* status, int cmp, V vals) {
  check_ivars(routine, ivars, n, cmp);
  if (!any_active(status, n)) return SIZE_MAX;
  size_t idx = SIZE_MAX;
  sync::wait_until([&] { return (idx = first_satisfied(ivars, n, status, cmp, vals)) != SIZE_MAX; },
                   [&] { return describe_set(routine, ivars, n, cmp, vals); }, pgas::watch_of(ivars, n * sizeof(T)));
  return idx;
}
template <typename T, typename V>
size_t wait_some(const char* routine, const T* ivars, size_t n, size_t* indices, const int* status, int cmp,
                 V vals) {
  check_ivars(routine, ivars, n, cmp);
  if (!any_active(status, n)) return 0;
  if (!indices) pgas::fail_null(routine, "indices", n * sizeof(size_t));
  size_t k = 0;
  sync::wait_until([&] { return (k = collect_satisfied(ivars, n, indices, status, cmp, vals)) > 0; },
                   [&] { return describe_set(routine, ivars, n, cmp, vals); }, pgas::watch_of(ivars, n * sizeof(T)));
  return k;
}
}  // namespace

extern "C" {

#define TS_DEF_P2P(T, N)                                                                                      \
  void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value) {                                                \
    pgas::wait_until("shmem_" #N "_wait_until", ivar, cmp, cmp_value);                                       \
  }                                                                                                           \
  void shmem_##N##_wait(T* ivar, T cmp_value) {                                                               \
    pgas::wait_until("shmem_" #N "_wait", ivar, SHMEM_CMP_NE, cmp_value);                                    \
  }                                                                                                           \
  void shmem_##N##_wait_until_all(T* ivars, size_t n, const int* status, int cmp, T v) {                      \
    wait_all("shmem_" #N "_wait_until_all", ivars, n, status, cmp, [v](size_t) { return v; });               \
  }                                                                                                           \
  size_t shmem_##N##_wait_until_any(T* ivars, size_t n, const int* status, int cmp, T v) {                    \
    return wait_any("shmem_" #N "_wait_until_any", ivars, n, status, cmp, [v](size_t) { return v; });        \
  }                                                                                                           \
  size_t shmem_##N##_wait_until_some(T* ivars, size_t n, size_t* idx, const int* status, int cmp, T v) {      \
    return wait_some("shmem_" #N "_wait_until_some", ivars, n, idx, status, cmp, [v](size_t) { return v; }); \
  }                                                                                                           \
  void shmem_##N##_wait_until_all_vector(T* ivars, size_t n, const int* status, int cmp, T* vs) {             \
    wait_all("shmem_" #N "_wait_until_all_vector", ivars, n, status, cmp, [vs](size_t i) { return vs[i]; }); \
  }                                                                                                           \
  size_t shmem_##N##_wait_until_any_vector(T* ivars, size_t n, const int* status, int cmp, T* vs) {           \
    return wait_any("shmem_" #N "_wait_until_any_vector", ivars, n, status, cmp,                             \
                    [vs](size_t i) { return vs[i]; });                                                        \
  }                                                                                                           \
  size_t shmem_##N##_wait_until_some_vector(T* ivars, size_t n, size_t* idx, const int* status, int cmp,      \
                                            T* vs) {                                                          \
    return wait_some("shmem_" #N "_wait_until_some_vector", ivars, n, idx, status, cmp,                      \
                     [vs](size_t i) { return vs[i]; });                                                       \
  }                                                                                                           \
  int shmem_##N##_test(T* ivar, int cmp, T cmp_value) {                                                       \
    return pgas::test("shmem_" #N "_test", ivar, cmp, cmp_value);                                            \
  }                                                                                                           \
  int shmem_##N##_test_all(T* ivars, size_t n, const int* status, int cmp, T v) {                             \
    check_ivars("shmem_" #N "_test_all", ivars, n, cmp);                                                      \
    return all_satisfied(ivars, n, status, cmp, [v](size_t) { return v; });                                  \
  }                                                                                                           \
  size_t shmem_##N##_test_any(T* ivars, size_t n, const int* status, int cmp, T v) {                          \
    check_ivars("shmem_" #N "_test_any", ivars, n, cmp);                                                      \
    return first_satisfied(ivars, n, status, cmp, [v](size_t) { return v; });                                \
  }                                                                                                           \
  size_t shmem_##N##_test_some(T* ivars, size_t n, size_t* idx, const int* status, int cmp, T v) {            \
    check_ivars("shmem_" #N "_test_some", ivars, n, cmp);                                                     \
    return collect_satisfied(ivars, n, idx, status, cmp, [v](size_t) { return v; });                         \
  }                                                                                                           \
  int shmem_##N##_test_all_vector(T* ivars, size_t n, const int* status, int cmp, T* vs) {                    \
    check_ivars("shmem_" #N "_test_all_vector", ivars, n, cmp);                                               \
    return all_satisfied(ivars, n, status, cmp, [vs](size_t i) { return vs[i]; });                           \
  }                                                                                                           \
  size_t shmem_##N##_test_any_vector(T* ivars, size_t n, const int* status, int cmp, T* vs) {                 \
    check_ivars("shmem_" #N "_test_any_vector", ivars, n, cmp);                                               \
    return first_satisfied(ivars, n, status, cmp, [vs](size_t i) { return vs[i]; });                         \
  }                                                                                                           \
  size_t shmem_##N##_test_some_vector(T* ivars, size_t n, size_t* idx, const int* status, int cmp, T* vs) {   \
    check_ivars("shmem_" #N "_test_some_vector", ivars, n, cmp);                                              \
    return collect_satisfied(ivars, n, idx, status, cmp, [vs](size_t i) { return vs[i]; });                  \
  }
TESSERA_P2P_TYPES(TS_DEF_P2P)

}  // extern "C"
