// Reductions (and/or/xor/max/min/sum/prod) and 1.6 scans on teams, for every type of the specification's
// team reduction table, complex types included for sum and prod.
#include "capi/coll_algos.h"
#include "capi/coll_route.h"

using namespace tessera;
using namespace tessera::capi::coll;

namespace {

template <typename T, typename Op>
int team_reduce(const char* r, shmem_team_t team, T* dest, const T* source, size_t n, Op op) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  if (route_reduce<T, Op>(r, t, team, dest, source, n)) return 0;
  Group g(r, t);
  g.expect_same("nreduce", n);
  reduce(g, dest, source, n, op);
  return 0;
}

template <typename T>
int team_scan(const char* r, shmem_team_t team, T* dest, const T* source, size_t n, bool inclusive) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  Group g(r, t);
  g.expect_same("nelems", n);
  scan(g, dest, source, n, inclusive);
  return 0;
}

}  // namespace

extern "C" {

#define TS_DEF_REDUCE(T, N, OP, FN)                                                                           \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce) {                \
    return team_reduce("shmem_" #N "_" #OP "_reduce", team, dest, source, nreduce, FN{});                     \
  }
#define TS_DEF_REDUCE_BIT(T, N) \
  TS_DEF_REDUCE(T, N, and, OpAnd) TS_DEF_REDUCE(T, N, or, OpOr) TS_DEF_REDUCE(T, N, xor, OpXor)
#define TS_DEF_REDUCE_MINMAX(T, N) TS_DEF_REDUCE(T, N, max, OpMax) TS_DEF_REDUCE(T, N, min, OpMin)
#define TS_DEF_REDUCE_ARITH(T, N) TS_DEF_REDUCE(T, N, sum, OpSum) TS_DEF_REDUCE(T, N, prod, OpProd)
TESSERA_REDUCE_BIT_TYPES(TS_DEF_REDUCE_BIT)
TESSERA_REDUCE_MINMAX_TYPES(TS_DEF_REDUCE_MINMAX)
TESSERA_REDUCE_ARITH_TYPES(TS_DEF_REDUCE_ARITH)
TESSERA_REDUCE_COMPLEX_TYPES(TS_DEF_REDUCE_ARITH)

#define TS_DEF_SCAN(T, N)                                                                                     \
  int shmem_##N##_sum_inscan(shmem_team_t team, T* dest, const T* source, size_t nelems) {                    \
    return team_scan("shmem_" #N "_sum_inscan", team, dest, source, nelems, true);                            \
  }                                                                                                           \
  int shmem_##N##_sum_exscan(shmem_team_t team, T* dest, const T* source, size_t nelems) {                    \
    return team_scan("shmem_" #N "_sum_exscan", team, dest, source, nelems, false);                           \
  }
TESSERA_REDUCE_ARITH_TYPES(TS_DEF_SCAN)

}  // extern "C"
