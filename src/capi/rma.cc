// RMA and signal routines of the C API: typed, sized and untyped forms, each with its shmem_ctx_ twin.
#include "capi/handles.h"
#include "pgas/p2p.h"
#include "pgas/rma.h"

using namespace tessera;
using tessera::capi::ctx_pe;

#define NB(routine, n, size) pgas::checked_bytes(routine, n, size)

// Blocking put/get for element size SZ under the names shmem_PUT/shmem_GET, with their ctx forms.
#define TS_RMA_BODY(PUT, GET, SZ)                                                                             \
  void shmem_##PUT(void* dest, const void* source, size_t nelems, int pe) {                                   \
    pgas::put_bytes("shmem_" #PUT, dest, source, NB("shmem_" #PUT, nelems, SZ), pe);                          \
  }                                                                                                           \
  void shmem_ctx_##PUT(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {              \
    shmem_##PUT(dest, source, nelems, ctx_pe("shmem_ctx_" #PUT, ctx, pe));                                    \
  }                                                                                                           \
  void shmem_##GET(void* dest, const void* source, size_t nelems, int pe) {                                   \
    pgas::get_bytes("shmem_" #GET, dest, source, NB("shmem_" #GET, nelems, SZ), pe);                          \
  }                                                                                                           \
  void shmem_ctx_##GET(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {              \
    shmem_##GET(dest, source, nelems, ctx_pe("shmem_ctx_" #GET, ctx, pe));                                    \
  }

// Put-with-signal for element size SZ under the names shmem_NAME_signal[_nbi], with their ctx forms. The
// non-blocking forms complete eagerly, like every put to a PE of this host.
#define TS_SIGNAL_BODY(NAME, SZ)                                                                              \
  void shmem_##NAME##_signal(void* dest, const void* source, size_t nelems, uint64_t* sig_addr,              \
                             uint64_t signal, int sig_op, int pe) {                                           \
    pgas::put_signal("shmem_" #NAME "_signal", dest, source, NB("shmem_" #NAME "_signal", nelems, SZ),       \
                     sig_addr, signal, sig_op, pe);                                                           \
  }                                                                                                           \
  void shmem_ctx_##NAME##_signal(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,             \
                                 uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {                   \
    shmem_##NAME##_signal(dest, source, nelems, sig_addr, signal, sig_op,                                     \
                          ctx_pe("shmem_ctx_" #NAME "_signal", ctx, pe));                                     \
  }                                                                                                           \
  void shmem_##NAME##_signal_nbi(void* dest, const void* source, size_t nelems, uint64_t* sig_addr,          \
                                 uint64_t signal, int sig_op, int pe) {                                       \
    pgas::put_signal("shmem_" #NAME "_signal_nbi", dest, source,                                              \
                     NB("shmem_" #NAME "_signal_nbi", nelems, SZ), sig_addr, signal, sig_op, pe);             \
  }                                                                                                           \
  void shmem_ctx_##NAME##_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,         \
                                     uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    shmem_##NAME##_signal_nbi(dest, source, nelems, sig_addr, signal, sig_op,                                 \
                              ctx_pe("shmem_ctx_" #NAME "_signal_nbi", ctx, pe));                             \
  }

extern "C" {

#define TS_DEF_RMA(T, N)                                                                                      \
  void shmem_##N##_put(T* dest, const T* source, size_t nelems, int pe) {                                     \
    pgas::put_bytes("shmem_" #N "_put", dest, source, NB("shmem_" #N "_put", nelems, sizeof(T)), pe);         \
  }                                                                                                           \
  void shmem_ctx_##N##_put(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe) {                \
    shmem_##N##_put(dest, source, nelems, ctx_pe("shmem_ctx_" #N "_put", ctx, pe));                           \
  }                                                                                                           \
  void shmem_##N##_get(T* dest, const T* source, size_t nelems, int pe) {                                     \
    pgas::get_bytes("shmem_" #N "_get", dest, source, NB("shmem_" #N "_get", nelems, sizeof(T)), pe);         \
  }                                                                                                           \
  void shmem_ctx_##N##_get(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe) {                \
    shmem_##N##_get(dest, source, nelems, ctx_pe("shmem_ctx_" #N "_get", ctx, pe));                           \
  }                                                                                                           \
  void shmem_##N##_put_nbi(T* dest, const T* source, size_t nelems, int pe) {                                 \
    pgas::put_nbi_bytes("shmem_" #N "_put_nbi", dest, source, NB("shmem_" #N "_put_nbi", nelems, sizeof(T)), pe); \
  }                                                                                                           \
  void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe) {            \
    shmem_##N##_put_nbi(dest, source, nelems, ctx_pe("shmem_ctx_" #N "_put_nbi", ctx, pe));                   \
  }                                                                                                           \
  void shmem_##N##_get_nbi(T* dest, const T* source, size_t nelems, int pe) {                                 \
    pgas::get_nbi_bytes("shmem_" #N "_get_nbi", dest, source, NB("shmem_" #N "_get_nbi", nelems, sizeof(T)), pe); \
  }                                                                                                           \
  void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe) {            \
    shmem_##N##_get_nbi(dest, source, nelems, ctx_pe("shmem_ctx_" #N "_get_nbi", ctx, pe));                   \
  }                                                                                                           \
  void shmem_##N##_p(T* dest, T value, int pe) { pgas::p("shmem_" #N "_p", dest, value, pe); }               \
  void shmem_ctx_##N##_p(shmem_ctx_t ctx, T* dest, T value, int pe) {                                         \
    pgas::p("shmem_ctx_" #N "_p", dest, value, ctx_pe("shmem_ctx_" #N "_p", ctx, pe));                        \
  }                                                                                                           \
  T shmem_##N##_g(const T* source, int pe) { return pgas::g("shmem_" #N "_g", source, pe); }                 \
  T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T* source, int pe) {                                             \
    return pgas::g("shmem_ctx_" #N "_g", source, ctx_pe("shmem_ctx_" #N "_g", ctx, pe));                      \
  }                                                                                                           \
  void shmem_##N##_iput(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {      \
    pgas::iput_bytes("shmem_" #N "_iput", dest, source, dst, sst, nelems, sizeof(T), pe);                     \
  }                                                                                                           \
  void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,          \
                            size_t nelems, int pe) {                                                          \
    shmem_##N##_iput(dest, source, dst, sst, nelems, ctx_pe("shmem_ctx_" #N "_iput", ctx, pe));               \
  }                                                                                                           \
  void shmem_##N##_iget(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {      \
    pgas::iget_bytes("shmem_" #N "_iget", dest, source, dst, sst, nelems, sizeof(T), pe);                     \
  }                                                                                                           \
  void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,          \
                            size_t nelems, int pe) {                                                          \
    shmem_##N##_iget(dest, source, dst, sst, nelems, ctx_pe("shmem_ctx_" #N "_iget", ctx, pe));               \
  }                                                                                                           \
  void shmem_##N##_ibput(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,                \
                         size_t nblocks, int pe) {                                                            \
    pgas::ibput_bytes("shmem_" #N "_ibput", dest, source, dst, sst, bsize, nblocks, sizeof(T), pe);           \
  }                                                                                                           \
  void shmem_ctx_##N##_ibput(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,         \
                             size_t bsize, size_t nblocks, int pe) {                                          \
    shmem_##N##_ibput(dest, source, dst, sst, bsize, nblocks, ctx_pe("shmem_ctx_" #N "_ibput", ctx, pe));     \
  }                                                                                                           \
  void shmem_##N##_ibget(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,                \
                         size_t nblocks, int pe) {                                                            \
    pgas::ibget_bytes("shmem_" #N "_ibget", dest, source, dst, sst, bsize, nblocks, sizeof(T), pe);           \
  }                                                                                                           \
  void shmem_ctx_##N##_ibget(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,         \
                             size_t bsize, size_t nblocks, int pe) {                                          \
    shmem_##N##_ibget(dest, source, dst, sst, bsize, nblocks, ctx_pe("shmem_ctx_" #N "_ibget", ctx, pe));     \
  }                                                                                                           \
  void shmem_##N##_put_signal(T* dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,   \
                              int sig_op, int pe) {                                                           \
    pgas::put_signal("shmem_" #N "_put_signal", dest, source, NB("shmem_" #N "_put_signal", nelems, sizeof(T)),\
                     sig_addr, signal, sig_op, pe);                                                           \
  }                                                                                                           \
  void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,                  \
                                  uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {                  \
    shmem_##N##_put_signal(dest, source, nelems, sig_addr, signal, sig_op,                                    \
                           ctx_pe("shmem_ctx_" #N "_put_signal", ctx, pe));                                   \
  }                                                                                                           \
  void shmem_##N##_put_signal_nbi(T* dest, const T* source, size_t nelems, uint64_t* sig_addr,               \
                                  uint64_t signal, int sig_op, int pe) {                                      \
    shmem_##N##_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe);                               \
  }                                                                                                           \
  void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,              \
                                      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {              \
    shmem_##N##_put_signal(dest, source, nelems, sig_addr, signal, sig_op,                                    \
                           ctx_pe("shmem_ctx_" #N "_put_signal_nbi", ctx, pe));                               \
  }
TESSERA_RMA_TYPES(TS_DEF_RMA)

#define TS_DEF_SIZED(BITS, BYTES)                                                                             \
  TS_RMA_BODY(put##BITS, get##BITS, BYTES)                                                                    \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe) {                         \
    pgas::put_nbi_bytes("shmem_put" #BITS "_nbi", dest, source, NB("shmem_put" #BITS "_nbi", nelems, BYTES), pe); \
  }                                                                                                           \
  void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {    \
    shmem_put##BITS##_nbi(dest, source, nelems, ctx_pe("shmem_ctx_put" #BITS "_nbi", ctx, pe));               \
  }                                                                                                           \
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe) {                         \
    pgas::get_nbi_bytes("shmem_get" #BITS "_nbi", dest, source, NB("shmem_get" #BITS "_nbi", nelems, BYTES), pe); \
  }                                                                                                           \
  void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {    \
    shmem_get##BITS##_nbi(dest, source, nelems, ctx_pe("shmem_ctx_get" #BITS "_nbi", ctx, pe));               \
  }                                                                                                           \
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {\
    pgas::iput_bytes("shmem_iput" #BITS, dest, source, dst, sst, nelems, BYTES, pe);                          \
  }                                                                                                           \
  void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,    \
                            size_t nelems, int pe) {                                                          \
    shmem_iput##BITS(dest, source, dst, sst, nelems, ctx_pe("shmem_ctx_iput" #BITS, ctx, pe));                \
  }                                                                                                           \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {\
    pgas::iget_bytes("shmem_iget" #BITS, dest, source, dst, sst, nelems, BYTES, pe);                          \
  }                                                                                                           \
  void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,    \
                            size_t nelems, int pe) {                                                          \
    shmem_iget##BITS(dest, source, dst, sst, nelems, ctx_pe("shmem_ctx_iget" #BITS, ctx, pe));                \
  }                                                                                                           \
  void shmem_ibput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,          \
                         size_t nblocks, int pe) {                                                            \
    pgas::ibput_bytes("shmem_ibput" #BITS, dest, source, dst, sst, bsize, nblocks, BYTES, pe);                \
  }                                                                                                           \
  void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,   \
                             size_t bsize, size_t nblocks, int pe) {                                          \
    shmem_ibput##BITS(dest, source, dst, sst, bsize, nblocks, ctx_pe("shmem_ctx_ibput" #BITS, ctx, pe));      \
  }                                                                                                           \
  void shmem_ibget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,          \
                         size_t nblocks, int pe) {                                                            \
    pgas::ibget_bytes("shmem_ibget" #BITS, dest, source, dst, sst, bsize, nblocks, BYTES, pe);                \
  }                                                                                                           \
  void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,   \
                             size_t bsize, size_t nblocks, int pe) {                                          \
    shmem_ibget##BITS(dest, source, dst, sst, bsize, nblocks, ctx_pe("shmem_ctx_ibget" #BITS, ctx, pe));      \
  }                                                                                                           \
  TS_SIGNAL_BODY(put##BITS, BYTES)
TESSERA_SIZED_RMA(TS_DEF_SIZED)

TS_RMA_BODY(putmem, getmem, 1)

void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  pgas::put_nbi_bytes("shmem_putmem_nbi", dest, source, nelems, pe);
}
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {
  shmem_putmem_nbi(dest, source, nelems, ctx_pe("shmem_ctx_putmem_nbi", ctx, pe));
}
void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  pgas::get_nbi_bytes("shmem_getmem_nbi", dest, source, nelems, pe);
}
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {
  shmem_getmem_nbi(dest, source, nelems, ctx_pe("shmem_ctx_getmem_nbi", ctx, pe));
}
TS_SIGNAL_BODY(putmem, 1)

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  return pgas::signal_fetch("shmem_signal_fetch", sig_addr);
}
uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  return pgas::signal_wait_until("shmem_signal_wait_until", sig_addr, cmp, cmp_value);
}
void shmem_signal_add(uint64_t* sig_addr, uint64_t signal, int pe) {
  pgas::atomic_fetch_add("shmem_signal_add", sig_addr, signal, pe);
}
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe) {
  shmem_signal_add(sig_addr, signal, ctx_pe("shmem_ctx_signal_add", ctx, pe));
}
void shmem_signal_set(uint64_t* sig_addr, uint64_t signal, int pe) {
  pgas::atomic_set("shmem_signal_set", sig_addr, signal, pe);
}
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe) {
  shmem_signal_set(sig_addr, signal, ctx_pe("shmem_ctx_signal_set", ctx, pe));
}

}  // extern "C"
