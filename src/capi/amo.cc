// Atomic memory operations of the C API (every type of the specification's AMO tables, ctx forms, the
// non-blocking fetching forms). Non-blocking fetches complete at once: the value is in *fetch on return.
#include "capi/handles.h"
#include "pgas/amo.h"

using namespace tessera;

extern "C" {

#define TS_DEF_AMO_EXT(T, N)                                                                                  \
  TS_WITH_CTX(T, N##_atomic_fetch, (const T* source), (source),                                               \
              return pgas::atomic_fetch(__func__, source, pe);)                                               \
  TS_WITH_CTX(void, N##_atomic_set, (T* dest, T value), (dest, value),                                        \
              pgas::atomic_set(__func__, dest, value, pe);)                                                   \
  TS_WITH_CTX(T, N##_atomic_swap, (T* dest, T value), (dest, value),                                          \
              return pgas::atomic_swap(__func__, dest, value, pe);)                                           \
  TS_WITH_CTX(void, N##_atomic_fetch_nbi, (T* fetch, const T* source), (fetch, source),                       \
              *fetch = pgas::atomic_fetch(__func__, source, pe);)                                             \
  TS_WITH_CTX(void, N##_atomic_swap_nbi, (T* fetch, T* dest, T value), (fetch, dest, value),                  \
              *fetch = pgas::atomic_swap(__func__, dest, value, pe);)
TESSERA_AMO_EXT_TYPES(TS_DEF_AMO_EXT)

#define TS_DEF_AMO_STD(T, N)                                                                                  \
  TS_WITH_CTX(T, N##_atomic_compare_swap, (T* dest, T cond, T value), (dest, cond, value),                    \
              return pgas::atomic_compare_swap(__func__, dest, cond, value, pe);)                             \
  TS_WITH_CTX(T, N##_atomic_fetch_inc, (T* dest), (dest),                                                     \
              return pgas::atomic_fetch_add(__func__, dest, static_cast<T>(1), pe);)                          \
  TS_WITH_CTX(void, N##_atomic_inc, (T* dest), (dest),                                                        \
              pgas::atomic_fetch_add(__func__, dest, static_cast<T>(1), pe);)                                 \
  TS_WITH_CTX(T, N##_atomic_fetch_add, (T* dest, T value), (dest, value),                                     \
              return pgas::atomic_fetch_add(__func__, dest, value, pe);)                                      \
  TS_WITH_CTX(void, N##_atomic_add, (T* dest, T value), (dest, value),                                        \
              pgas::atomic_fetch_add(__func__, dest, value, pe);)                                             \
  TS_WITH_CTX(void, N##_atomic_compare_swap_nbi, (T* fetch, T* dest, T cond, T value), (fetch, dest, cond, value), \
              *fetch = pgas::atomic_compare_swap(__func__, dest, cond, value, pe);)                           \
  TS_WITH_CTX(void, N##_atomic_fetch_inc_nbi, (T* fetch, T* dest), (fetch, dest),                             \
              *fetch = pgas::atomic_fetch_add(__func__, dest, static_cast<T>(1), pe);)                        \
  TS_WITH_CTX(void, N##_atomic_fetch_add_nbi, (T* fetch, T* dest, T value), (fetch, dest, value),             \
              *fetch = pgas::atomic_fetch_add(__func__, dest, value, pe);)
TESSERA_AMO_STD_TYPES(TS_DEF_AMO_STD)

// OP names the routines (and, or, xor), KIND the operation pgas::atomic_fetch_op applies.
#define TS_DEF_AMO_BIT_OP(T, N, OP, KIND)                                                                     \
  TS_WITH_CTX(T, N##_atomic_fetch_##OP, (T* dest, T value), (dest, value),                                    \
              return pgas::atomic_fetch_op<transport::AtomicOp::KIND>(__func__, dest, value, pe);)            \
  TS_WITH_CTX(void, N##_atomic_##OP, (T* dest, T value), (dest, value),                                       \
              pgas::atomic_fetch_op<transport::AtomicOp::KIND>(__func__, dest, value, pe);)                   \
  TS_WITH_CTX(void, N##_atomic_fetch_##OP##_nbi, (T* fetch, T* dest, T value), (fetch, dest, value),          \
              *fetch = pgas::atomic_fetch_op<transport::AtomicOp::KIND>(__func__, dest, value, pe);)
#define TS_DEF_AMO_BIT(T, N)                                                                                  \
  TS_DEF_AMO_BIT_OP(T, N, and, kFetchAnd) TS_DEF_AMO_BIT_OP(T, N, or, kFetchOr) TS_DEF_AMO_BIT_OP(T, N, xor, kFetchXor)
TESSERA_AMO_BIT_TYPES(TS_DEF_AMO_BIT)

}  // extern "C"
