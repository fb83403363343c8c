// Deprecated active-set collectives (PE_start, logPE_stride, PE_size, pSync): barrier, sync, broadcast32/64,
// collect32/64, fcollect32/64, alltoall32/64, alltoalls32/64 and the *_to_all reductions. Same algorithms as
// the team forms (coll_algos.h); synchronisation goes through pSync (coll_group.h).
#include "capi/coll_algos.h"
#include "pgas/order.h"

using namespace tessera;
using namespace tessera::capi::coll;

namespace {

template <typename T, typename Op>
void active_reduce(const char* r, T* dest, const T* source, int nreduce, int start, int log_stride, int size,
                   long* psync, Op op) {
  if (nreduce < 0) log::fatal("{}: nreduce {} is negative", r, nreduce);
  Group g(r, start, log_stride, size, psync);
  reduce(g, dest, source, static_cast<size_t>(nreduce), op);
}

}  // namespace

extern "C" {

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  Group g("shmem_barrier", PE_start, logPE_stride, PE_size, pSync);
  pgas::quiet();
  g.barrier();
}

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  Group g("shmem_sync", PE_start, logPE_stride, PE_size, pSync);
  g.barrier();
}

#define TS_DEF_ASET(BITS)                                                                                     \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root, int PE_start,        \
                             int logPE_stride, int PE_size, long* pSync) {                                    \
    const char* r = "shmem_broadcast" #BITS;                                                                  \
    Group g(r, PE_start, logPE_stride, PE_size, pSync);                                                       \
    broadcast(g, dest, source, checked_extent(r, dest, source, nelems, BITS / 8), PE_root, false);            \
  }                                                                                                           \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,      \
                           int PE_size, long* pSync) {                                                        \
    const char* r = "shmem_collect" #BITS;                                                                    \
    Group g(r, PE_start, logPE_stride, PE_size, pSync);                                                       \
    size_t bytes = pgas::checked_bytes(r, nelems, BITS / 8);                                                  \
    if (bytes && !source) pgas::fail_null(r, "source", bytes);                                                \
    collect(g, dest, source, bytes);                                                                          \
  }                                                                                                           \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,     \
                            int PE_size, long* pSync) {                                                       \
    const char* r = "shmem_fcollect" #BITS;                                                                   \
    Group g(r, PE_start, logPE_stride, PE_size, pSync);                                                       \
    fcollect(g, dest, source, checked_extent(r, dest, source, nelems, BITS / 8));                             \
  }                                                                                                           \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,     \
                            int PE_size, long* pSync) {                                                       \
    const char* r = "shmem_alltoall" #BITS;                                                                   \
    Group g(r, PE_start, logPE_stride, PE_size, pSync);                                                       \
    alltoall(g, dest, source, checked_extent(r, dest, source, nelems, BITS / 8));                             \
  }                                                                                                           \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                             int PE_start, int logPE_stride, int PE_size, long* pSync) {                      \
    const char* r = "shmem_alltoalls" #BITS;                                                                  \
    Group g(r, PE_start, logPE_stride, PE_size, pSync);                                                       \
    checked_extent(r, dest, source, nelems, BITS / 8);                                                        \
    alltoalls(g, dest, source, dst, sst, nelems, BITS / 8);                                                   \
  }
TS_DEF_ASET(32)
TS_DEF_ASET(64)

#define TS_DEF_TOALL(T, N, OP, FN)                                                                            \
  void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce, int PE_start, int logPE_stride,       \
                                 int PE_size, T* pWrk, long* pSync) {                                         \
    active_reduce("shmem_" #N "_" #OP "_to_all", dest, source, nreduce, PE_start, logPE_stride, PE_size,      \
                  pSync, FN{});                                                                               \
  }
#define TS_DEF_TOALL_BIT(T, N) \
  TS_DEF_TOALL(T, N, and, OpAnd) TS_DEF_TOALL(T, N, or, OpOr) TS_DEF_TOALL(T, N, xor, OpXor)
#define TS_DEF_TOALL_MINMAX(T, N) TS_DEF_TOALL(T, N, max, OpMax) TS_DEF_TOALL(T, N, min, OpMin)
#define TS_DEF_TOALL_ARITH(T, N) TS_DEF_TOALL(T, N, sum, OpSum) TS_DEF_TOALL(T, N, prod, OpProd)
TESSERA_TOALL_BIT_TYPES(TS_DEF_TOALL_BIT)
TESSERA_TOALL_MINMAX_TYPES(TS_DEF_TOALL_MINMAX)
TESSERA_TOALL_ARITH_TYPES(TS_DEF_TOALL_ARITH)

}  // extern "C"
