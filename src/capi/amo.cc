// Atomic memory operations of the C API (every type of the specification's AMO tables, ctx forms, the
// non-blocking fetching forms). Non-blocking fetches complete at once: the value is in *fetch on return.
#include "capi/handles.h"
#include "pgas/amo.h"

using namespace tessera;
using tessera::capi::ctx_pe;

extern "C" {

#define TS_DEF_AMO_EXT(T, N)                                                                                  \
  T shmem_##N##_atomic_fetch(const T* source, int pe) {                                                       \
    return pgas::atomic_fetch("shmem_" #N "_atomic_fetch", source, pe);                                      \
  }                                                                                                           \
  T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T* source, int pe) {                                  \
    return shmem_##N##_atomic_fetch(source, ctx_pe("shmem_ctx_" #N "_atomic_fetch", ctx, pe));               \
  }                                                                                                           \
  void shmem_##N##_atomic_set(T* dest, T value, int pe) {                                                     \
    pgas::atomic_set("shmem_" #N "_atomic_set", dest, value, pe);                                            \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T* dest, T value, int pe) {                                \
    shmem_##N##_atomic_set(dest, value, ctx_pe("shmem_ctx_" #N "_atomic_set", ctx, pe));                     \
  }                                                                                                           \
  T shmem_##N##_atomic_swap(T* dest, T value, int pe) {                                                       \
    return pgas::atomic_swap("shmem_" #N "_atomic_swap", dest, value, pe);                                   \
  }                                                                                                           \
  T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T* dest, T value, int pe) {                                  \
    return shmem_##N##_atomic_swap(dest, value, ctx_pe("shmem_ctx_" #N "_atomic_swap", ctx, pe));            \
  }                                                                                                           \
  void shmem_##N##_atomic_fetch_nbi(T* fetch, const T* source, int pe) {                                      \
    *fetch = pgas::atomic_fetch("shmem_" #N "_atomic_fetch_nbi", source, pe);                                \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T* fetch, const T* source, int pe) {                 \
    shmem_##N##_atomic_fetch_nbi(fetch, source, ctx_pe("shmem_ctx_" #N "_atomic_fetch_nbi", ctx, pe));       \
  }                                                                                                           \
  void shmem_##N##_atomic_swap_nbi(T* fetch, T* dest, T value, int pe) {                                      \
    *fetch = pgas::atomic_swap("shmem_" #N "_atomic_swap_nbi", dest, value, pe);                             \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe) {                 \
    shmem_##N##_atomic_swap_nbi(fetch, dest, value, ctx_pe("shmem_ctx_" #N "_atomic_swap_nbi", ctx, pe));    \
  }
TESSERA_AMO_EXT_TYPES(TS_DEF_AMO_EXT)

#define TS_DEF_AMO_STD(T, N)                                                                                  \
  T shmem_##N##_atomic_compare_swap(T* dest, T cond, T value, int pe) {                                       \
    return pgas::atomic_compare_swap("shmem_" #N "_atomic_compare_swap", dest, cond, value, pe);             \
  }                                                                                                           \
  T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T* dest, T cond, T value, int pe) {                  \
    return shmem_##N##_atomic_compare_swap(dest, cond, value,                                                 \
                                           ctx_pe("shmem_ctx_" #N "_atomic_compare_swap", ctx, pe));          \
  }                                                                                                           \
  T shmem_##N##_atomic_fetch_inc(T* dest, int pe) {                                                           \
    return pgas::atomic_fetch_add("shmem_" #N "_atomic_fetch_inc", dest, static_cast<T>(1), pe);                          \
  }                                                                                                           \
  T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T* dest, int pe) {                                      \
    return shmem_##N##_atomic_fetch_inc(dest, ctx_pe("shmem_ctx_" #N "_atomic_fetch_inc", ctx, pe));         \
  }                                                                                                           \
  void shmem_##N##_atomic_inc(T* dest, int pe) {                                                              \
    pgas::atomic_fetch_add("shmem_" #N "_atomic_inc", dest, static_cast<T>(1), pe);                                       \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T* dest, int pe) {                                         \
    shmem_##N##_atomic_inc(dest, ctx_pe("shmem_ctx_" #N "_atomic_inc", ctx, pe));                            \
  }                                                                                                           \
  T shmem_##N##_atomic_fetch_add(T* dest, T value, int pe) {                                                  \
    return pgas::atomic_fetch_add("shmem_" #N "_atomic_fetch_add", dest, value, pe);                         \
  }                                                                                                           \
  T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T* dest, T value, int pe) {                             \
    return shmem_##N##_atomic_fetch_add(dest, value, ctx_pe("shmem_ctx_" #N "_atomic_fetch_add", ctx, pe));  \
  }                                                                                                           \
  void shmem_##N##_atomic_add(T* dest, T value, int pe) {                                                     \
    pgas::atomic_fetch_add("shmem_" #N "_atomic_add", dest, value, pe);                                      \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T* dest, T value, int pe) {                                \
    shmem_##N##_atomic_add(dest, value, ctx_pe("shmem_ctx_" #N "_atomic_add", ctx, pe));                     \
  }                                                                                                           \
  void shmem_##N##_atomic_compare_swap_nbi(T* fetch, T* dest, T cond, T value, int pe) {                      \
    *fetch = pgas::atomic_compare_swap("shmem_" #N "_atomic_compare_swap_nbi", dest, cond, value, pe);       \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T cond, T value, int pe) { \
    shmem_##N##_atomic_compare_swap_nbi(fetch, dest, cond, value,                                             \
                                        ctx_pe("shmem_ctx_" #N "_atomic_compare_swap_nbi", ctx, pe));         \
  }                                                                                                           \
  void shmem_##N##_atomic_fetch_inc_nbi(T* fetch, T* dest, int pe) {                                          \
    *fetch = pgas::atomic_fetch_add("shmem_" #N "_atomic_fetch_inc_nbi", dest, static_cast<T>(1), pe);                    \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T* fetch, T* dest, int pe) {                     \
    shmem_##N##_atomic_fetch_inc_nbi(fetch, dest, ctx_pe("shmem_ctx_" #N "_atomic_fetch_inc_nbi", ctx, pe)); \
  }                                                                                                           \
  void shmem_##N##_atomic_fetch_add_nbi(T* fetch, T* dest, T value, int pe) {                                 \
    *fetch = pgas::atomic_fetch_add("shmem_" #N "_atomic_fetch_add_nbi", dest, value, pe);                   \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe) {            \
    shmem_##N##_atomic_fetch_add_nbi(fetch, dest, value,                                                      \
                                     ctx_pe("shmem_ctx_" #N "_atomic_fetch_add_nbi", ctx, pe));               \
  }
TESSERA_AMO_STD_TYPES(TS_DEF_AMO_STD)

#define TS_DEF_AMO_BIT_OP(T, N, OP)                                                                           \
  T shmem_##N##_atomic_fetch_##OP(T* dest, T value, int pe) {                                                 \
    return pgas::atomic_fetch_##OP("shmem_" #N "_atomic_fetch_" #OP, dest, value, pe);                       \
  }                                                                                                           \
  T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T* dest, T value, int pe) {                            \
    return shmem_##N##_atomic_fetch_##OP(dest, value, ctx_pe("shmem_ctx_" #N "_atomic_fetch_" #OP, ctx, pe)); \
  }                                                                                                           \
  void shmem_##N##_atomic_##OP(T* dest, T value, int pe) {                                                    \
    pgas::atomic_fetch_##OP("shmem_" #N "_atomic_" #OP, dest, value, pe);                                    \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T* dest, T value, int pe) {                               \
    shmem_##N##_atomic_##OP(dest, value, ctx_pe("shmem_ctx_" #N "_atomic_" #OP, ctx, pe));                   \
  }                                                                                                           \
  void shmem_##N##_atomic_fetch_##OP##_nbi(T* fetch, T* dest, T value, int pe) {                              \
    *fetch = pgas::atomic_fetch_##OP("shmem_" #N "_atomic_fetch_" #OP "_nbi", dest, value, pe);              \
  }                                                                                                           \
  void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe) {         \
    shmem_##N##_atomic_fetch_##OP##_nbi(fetch, dest, value,                                                   \
                                        ctx_pe("shmem_ctx_" #N "_atomic_fetch_" #OP "_nbi", ctx, pe));        \
  }
#define TS_DEF_AMO_BIT(T, N) TS_DEF_AMO_BIT_OP(T, N, and) TS_DEF_AMO_BIT_OP(T, N, or) TS_DEF_AMO_BIT_OP(T, N, xor)
TESSERA_AMO_BIT_TYPES(TS_DEF_AMO_BIT)

}  // extern "C"
