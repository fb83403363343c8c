// RMA and signal routines of the C API: typed, sized and untyped forms, each with its shmem_ctx_ twin.
#include "capi/handles.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"

using namespace tessera;
using tessera::capi::ctx_pe;

// Signal operations pass from the C API to pgas and the transports as they are: transport::SignalOp numbers
// them as shmem.h does, which transport/transport.h may not include, so the numbering is pinned here, where
// the values are handed down.
static_assert(transport::kSignalSet == SHMEM_SIGNAL_SET && transport::kSignalAdd == SHMEM_SIGNAL_ADD,
              "transport::SignalOp differs from SHMEM_SIGNAL_SET/ADD");

#define NB(routine, n, size) pgas::checked_bytes(routine, n, size)

// Contiguous RMA of elements of type T (void for the sized and untyped forms), SZ bytes each, under the
// names shmem_PUT, shmem_GET, their _nbi forms and shmem_PUT_signal[_nbi], each with its ctx form. The
// non-blocking forms complete eagerly, like every put to a PE of this host.
#define TS_RMA_CONTIG(T, PUT, GET, SZ)                                                                        \
  TS_WITH_CTX(void, PUT, (T* dest, const T* source, size_t nelems), (dest, source, nelems),                   \
              pgas::put_bytes(__func__, dest, source, NB(__func__, nelems, SZ), pe);)                         \
  TS_WITH_CTX(void, GET, (T* dest, const T* source, size_t nelems), (dest, source, nelems),                   \
              pgas::get_bytes(__func__, dest, source, NB(__func__, nelems, SZ), pe);)                         \
  TS_WITH_CTX(void, PUT##_nbi, (T* dest, const T* source, size_t nelems), (dest, source, nelems),             \
              pgas::put_nbi_bytes(__func__, dest, source, NB(__func__, nelems, SZ), pe);)                     \
  TS_WITH_CTX(void, GET##_nbi, (T* dest, const T* source, size_t nelems), (dest, source, nelems),             \
              pgas::get_nbi_bytes(__func__, dest, source, NB(__func__, nelems, SZ), pe);)                     \
  TS_RMA_SIGNAL(T, PUT##_signal, SZ)                                                                          \
  TS_RMA_SIGNAL(T, PUT##_signal_nbi, SZ)
#define TS_RMA_SIGNAL(T, NAME, SZ)                                                                            \
  TS_WITH_CTX(void, NAME, (T* dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,      \
                           int sig_op),                                                                       \
              (dest, source, nelems, sig_addr, signal, sig_op),                                               \
              pgas::put_signal(__func__, dest, source, NB(__func__, nelems, SZ), sig_addr, signal, sig_op, pe);)

// Strided RMA of elements of type T, SZ bytes each, under the names shmem_IPUT, shmem_IGET, shmem_IBPUT and
// shmem_IBGET, each with its ctx form.
#define TS_RMA_STRIDED(T, IPUT, IGET, IBPUT, IBGET, SZ)                                                       \
  TS_WITH_CTX(void, IPUT, (T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems),            \
              (dest, source, dst, sst, nelems),                                                               \
              pgas::iput_bytes(__func__, dest, source, dst, sst, nelems, SZ, pe);)                            \
  TS_WITH_CTX(void, IGET, (T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems),            \
              (dest, source, dst, sst, nelems),                                                               \
              pgas::iget_bytes(__func__, dest, source, dst, sst, nelems, SZ, pe);)                            \
  TS_WITH_CTX(void, IBPUT,                                                                                    \
              (T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks),         \
              (dest, source, dst, sst, bsize, nblocks),                                                       \
              pgas::ibput_bytes(__func__, dest, source, dst, sst, bsize, nblocks, SZ, pe);)                   \
  TS_WITH_CTX(void, IBGET,                                                                                    \
              (T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks),         \
              (dest, source, dst, sst, bsize, nblocks),                                                       \
              pgas::ibget_bytes(__func__, dest, source, dst, sst, bsize, nblocks, SZ, pe);)

extern "C" {

// The typed forms. p and g report errors under the name the caller used, ctx form included.
#define TS_DEF_RMA(T, N)                                                                                      \
  TS_RMA_CONTIG(T, N##_put, N##_get, sizeof(T))                                                               \
  TS_RMA_STRIDED(T, N##_iput, N##_iget, N##_ibput, N##_ibget, sizeof(T))                                      \
  void shmem_##N##_p(T* dest, T value, int pe) { pgas::p("shmem_" #N "_p", dest, value, pe); }               \
  void shmem_ctx_##N##_p(shmem_ctx_t ctx, T* dest, T value, int pe) {                                         \
    pgas::p("shmem_ctx_" #N "_p", dest, value, ctx_pe("shmem_ctx_" #N "_p", ctx, pe));                        \
  }                                                                                                           \
  T shmem_##N##_g(const T* source, int pe) { return pgas::g("shmem_" #N "_g", source, pe); }                 \
  T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T* source, int pe) {                                             \
    return pgas::g("shmem_ctx_" #N "_g", source, ctx_pe("shmem_ctx_" #N "_g", ctx, pe));                      \
  }
TESSERA_RMA_TYPES(TS_DEF_RMA)

#define TS_DEF_SIZED(BITS, BYTES)                                                                             \
  TS_RMA_CONTIG(void, put##BITS, get##BITS, BYTES)                                                            \
  TS_RMA_STRIDED(void, iput##BITS, iget##BITS, ibput##BITS, ibget##BITS, BYTES)
TESSERA_SIZED_RMA(TS_DEF_SIZED)

TS_RMA_CONTIG(void, putmem, getmem, 1)

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  return pgas::signal_fetch("shmem_signal_fetch", sig_addr);
}
uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  return pgas::signal_wait_until("shmem_signal_wait_until", sig_addr, cmp, cmp_value);
}
TS_WITH_CTX(void, signal_add, (uint64_t* sig_addr, uint64_t signal), (sig_addr, signal),
            pgas::atomic_fetch_add(__func__, sig_addr, signal, pe);)
TS_WITH_CTX(void, signal_set, (uint64_t* sig_addr, uint64_t signal), (sig_addr, signal),
            pgas::atomic_set(__func__, sig_addr, signal, pe);)

}  // extern "C"
