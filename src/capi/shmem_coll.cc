// OpenSHMEM collectives on teams (1.5 section 9.9, 1.6 scans) and on deprecated active sets (PE_start,
// logPE_stride, PE_size, pSync), every type of the specification's tables, over the collective engine
// (shmem_coll.h).
#include "capi/shmem_coll.h"

#include <shmemx.h>

#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/log.h"
#include "base/memcopy.h"
#include "capi/active_set.h"
#include "capi/handles.h"
#include "capi/last_error.h"
#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/resilience.h"
#include "pgas/order.h"
#include "pgas/rma.h"
#include "pgas/resilient.h"
#include "pgas/runtime.h"
#include "pgas/team.h"

using namespace tessera;
using tessera::coll::Args;
using tessera::coll::Communicator;
using tessera::coll::DType;
using tessera::coll::Kind;
using tessera::coll::Op;

namespace tessera::capi::coll {
namespace {

// ---- Types: the engine's element type of each C type of the tables.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, long double>) return DType::kLongDouble;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kComplex64;
  else if constexpr (std::is_same_v<T, std::complex<double>>) return DType::kComplex128;
  else {
    static_assert(std::is_integral_v<T>, "not a type of the reduction tables");
    constexpr bool s = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return s ? DType::kInt8 : DType::kUint8;
    else if constexpr (sizeof(T) == 2) return s ? DType::kInt16 : DType::kUint16;
    else if constexpr (sizeof(T) == 4) return s ? DType::kInt32 : DType::kUint32;
    else return s ? DType::kInt64 : DType::kUint64;
  }
}

// ---- Argument checks shared by every routine.

// Bytes of `nelems` elements (overflow is fatal); a null buffer with a size is fatal too.
size_t checked_extent(const char* routine, const void* dest, const void* source, size_t nelems, size_t elem) {
  size_t bytes = pgas::checked_bytes(routine, nelems, elem);
  if (bytes && !dest) pgas::fail_null(routine, "dest", bytes);
  if (bytes && !source) pgas::fail_null(routine, "source", bytes);
  return bytes;
}

// The buffer lies in this PE's symmetric memory (then it does on every member, which pass it alike).
void check_symmetric(const char* routine, const void* p, size_t bytes) {
  if (bytes) (void)pgas::remote(routine, p, bytes, pgas::rt().my_pe);
}

void check_root(const char* routine, int root, int n) {
  if (root < 0 || root >= n)
    log::fatal("{}: PE_root {} is out of range: the collective has {} PEs (0..{})", routine, root, n, n - 1);
}

// Reductions and scans take dest == source or disjoint buffers (specification); anything else is fatal.
void check_same_or_disjoint(const char* routine, const void* dest, const void* source, size_t bytes) {
  auto d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(source);
  if (d != s && d < s + bytes && s < d + bytes)
    log::fatal("{}: dest {} and source {} overlap partially ({} bytes each); they must be the same buffer or "
               "disjoint", routine, dest, source, bytes);
}

// Team behind a handle; null for SHMEM_TEAM_INVALID (the caller returns -1 after a warning), a fatal error
// for a destroyed or forged handle.
pgas::Team* coll_team(const char* routine, shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) {
    log::warn("{}: team is SHMEM_TEAM_INVALID; nothing was done and the call returns -1", routine);
    return nullptr;
  }
  pgas::Team* t = team_of(routine, team);
  if (!t) pgas::fail_not_initialized(routine);
  return t;
}

// ---- Calls into the engine.

// Resilient mode: set while a team collective runs, which has an error to return. A call the engine
// stopped because a member failed then throws TeamCallFailed to the team form (on_team); elsewhere
// (active sets, whose routines return nothing) it ends the job.
thread_local bool t_team_call = false;
struct TeamCallFailed {
  Status st;
};

void run(const char* routine, Communicator& c, Kind kind, Args a, bool symmetric = true) {
  a.symmetric = symmetric;
  c.caller = routine;
  Status st = tessera::coll::dispatch(c, kind, a);
  c.caller = nullptr;
  if (!st.is_ok()) [[unlikely]] {
    if (t_team_call && (st.code() == Code::kPeerFailed || st.code() == Code::kRevoked)) throw TeamCallFailed{st};
    log::fatal("{}: {}", routine, st.message());
  }
}

Args bytes_args(const void* source, void* dest, size_t bytes) {
  return Args{.send = source, .recv = dest, .count = bytes, .dtype = DType::kUint8};
}

void broadcast(const char* r, Communicator& c, void* dest, const void* source, size_t bytes, int root,
               bool update_root) {
  check_root(r, root, c.size);
  if (bytes == 0) return;  // every member passes the same count
  check_symmetric(r, dest, bytes);
  check_symmetric(r, source, bytes);
  // The active-set form leaves the root's dest alone: the root then passes its source as its dest.
  Args a = bytes_args(source, c.rank == root && !update_root ? const_cast<void*>(source) : dest, bytes);
  a.root = root;
  run(r, c, Kind::kBroadcast, a);
}

// collect: the members' sizes first (an allgather), then an allgatherv at those displacements.
void collect(const char* r, Communicator& c, void* dest, const void* source, size_t my_bytes) {
  check_symmetric(r, source, my_bytes);
  const size_t n = static_cast<size_t>(c.size);
  std::vector<uint64_t> sizes(n);
  uint64_t mine = my_bytes;
  run(r, c, Kind::kAllgather, bytes_args(&mine, sizes.data(), sizeof mine), /*symmetric=*/false);
  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (size_t j = 0; j < n; ++j) {
    counts[j] = sizes[j];
    displs[j] = total;
    if (__builtin_add_overflow(total, counts[j], &total))
      log::fatal("{}: the members' element counts add up to more than {} bytes", r, SIZE_MAX);
  }
  if (total == 0) return;
  if (!dest) pgas::fail_null(r, "dest", total);
  check_symmetric(r, dest, total);
  Args a = bytes_args(source, dest, my_bytes);
  a.rcounts = counts.data();
  a.rdispls = displs.data();
  run(r, c, Kind::kAllgatherv, a);
}

void fcollect(const char* r, Communicator& c, void* dest, const void* source, size_t bytes) {
  if (bytes == 0) return;
  check_symmetric(r, source, bytes);
  check_symmetric(r, dest, pgas::checked_bytes(r, bytes, static_cast<size_t>(c.size)));
  run(r, c, Kind::kAllgather, bytes_args(source, dest, bytes));
}

void alltoall(const char* r, Communicator& c, void* dest, const void* source, size_t block) {
  if (block == 0) return;
  const size_t total = pgas::checked_bytes(r, block, static_cast<size_t>(c.size));
  check_symmetric(r, source, total);
  check_symmetric(r, dest, total);
  run(r, c, Kind::kAlltoall, bytes_args(source, dest, block));
}

// Bytes spanned by `nelems` elements of `elem` bytes `stride` elements apart, or a fatal overflow message.
size_t strided_extent(const char* r, size_t nelems, ptrdiff_t stride, size_t elem) {
  if (nelems == 0) return 0;
  size_t span, bytes;
  if (__builtin_mul_overflow(nelems - 1, static_cast<size_t>(stride), &span) ||
      __builtin_add_overflow(span, size_t{1}, &span) || __builtin_mul_overflow(span, elem, &bytes))
    log::fatal("{}: {} elements {} apart of {} bytes overflow the address space (limit {} bytes)", r, nelems, stride,
               elem, SIZE_MAX);
  return bytes;
}

// alltoalls: element e of block j of dest (elements dst apart) comes from element e of block me of member
// j's source (elements sst apart). Unit strides are an alltoall; others gather each block's elements into a
// packed private buffer, exchange it, and scatter the result.
void alltoalls(const char* r, Communicator& c, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
               size_t nelems, size_t elem) {
  if (dst < 1) log::fatal("{}: dst {} must be at least 1", r, dst);
  if (sst < 1) log::fatal("{}: sst {} must be at least 1", r, sst);
  if (nelems == 0) return;
  const size_t all = pgas::checked_bytes(r, nelems, static_cast<size_t>(c.size));
  check_symmetric(r, dest, strided_extent(r, all, dst, elem));
  check_symmetric(r, source, strided_extent(r, all, sst, elem));
  if (dst == 1 && sst == 1) return alltoall(r, c, dest, source, nelems * elem);
  std::vector<char> out(all * elem), in(all * elem);
  const char* s = static_cast<const char*>(source);
  for (size_t e = 0; e < all; ++e) memcopy(out.data() + e * elem, s + e * static_cast<size_t>(sst) * elem, elem);
  run(r, c, Kind::kAlltoall, bytes_args(out.data(), in.data(), nelems * elem), /*symmetric=*/false);
  char* d = static_cast<char*>(dest);
  for (size_t e = 0; e < all; ++e) memcopy(d + e * static_cast<size_t>(dst) * elem, in.data() + e * elem, elem);
}

template <typename T>
void reduce(const char* r, Communicator& c, T* dest, const T* source, size_t n, Op op, Kind kind = Kind::kAllreduce) {
  const size_t bytes = checked_extent(r, dest, source, n, sizeof(T));
  if (n == 0) return;  // every member passes the same count
  check_same_or_disjoint(r, dest, source, bytes);
  check_symmetric(r, dest, bytes);
  check_symmetric(r, source, bytes);
  Args a;
  a.send = source;
  a.recv = dest;
  a.count = n;
  a.dtype = dtype_of<T>();
  a.op = op;
  run(r, c, kind, a);
}

// ---- Team forms: the handle, then the shared body.

// The team's form of a collective: -1 for SHMEM_TEAM_INVALID, SHMEMX_PEER_FAILED when resilient mode stopped
// it (the message kept for tesseraGetLastError), else 0.
template <typename F>
int on_team(const char* r, shmem_team_t team, F&& body) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  if (t->broken) [[unlikely]] {
    (void)to_result(make_status(Code::kPeerFailed, "{}: the {} is broken by an earlier failure: shrink "
                                "(shmemx_team_shrink) or destroy it", r, t->describe()));
    return SHMEMX_PEER_FAILED;
  }
  struct Scope {
    Scope() { t_team_call = true; }
    ~Scope() { t_team_call = false; }
  } scope;
  try {
    body(team_comm(r, t));
  } catch (const TeamCallFailed& e) {
    // The engine's text points at the communicator API's recovery; a team recovers by its own.
    std::string m = e.st.message();
    if (size_t at = m.find("agree, shrink (tesseraCommShrink) or destroy it"); at != std::string::npos)
      m.replace(at, std::string::npos, "shrink the team (shmemx_team_shrink) or destroy it");
    (void)to_result(Status(e.st.code(), m));
    t->broken = true;
    return SHMEMX_PEER_FAILED;
  }
  return 0;
}

int team_broadcast(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem,
                   int root) {
  return on_team(r, team, [&](Communicator& c) {
    broadcast(r, c, dest, source, checked_extent(r, dest, source, nelems, elem), root, /*update_root=*/true);
  });
}
int team_collect(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem) {
  return on_team(r, team, [&](Communicator& c) {
    size_t bytes = pgas::checked_bytes(r, nelems, elem);
    if (bytes && !source) pgas::fail_null(r, "source", bytes);
    collect(r, c, dest, source, bytes);
  });
}
int team_fcollect(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem) {
  return on_team(r, team, [&](Communicator& c) { fcollect(r, c, dest, source, checked_extent(r, dest, source, nelems, elem)); });
}
int team_alltoall(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem) {
  return on_team(r, team, [&](Communicator& c) { alltoall(r, c, dest, source, checked_extent(r, dest, source, nelems, elem)); });
}
int team_alltoalls(const char* r, shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t elem) {
  return on_team(r, team, [&](Communicator& c) {
    checked_extent(r, dest, source, nelems, elem);
    alltoalls(r, c, dest, source, dst, sst, nelems, elem);
  });
}
template <typename T>
int team_reduce(const char* r, shmem_team_t team, T* dest, const T* source, size_t n, Op op) {
  return on_team(r, team, [&](Communicator& c) { reduce(r, c, dest, source, n, op); });
}
template <typename T>
int team_scan(const char* r, shmem_team_t team, T* dest, const T* source, size_t n, bool inclusive) {
  return on_team(r, team, [&](Communicator& c) {
    reduce(r, c, dest, source, n, Op::kSum, inclusive ? Kind::kInscan : Kind::kExscan);
  });
}

template <typename T>
void active_reduce(const char* r, T* dest, const T* source, int nreduce, int start, int log_stride, int size,
                   long* psync, Op op) {
  if (nreduce < 0) log::fatal("{}: nreduce {} is negative", r, nreduce);
  reduce(r, set_of(r, start, log_stride, size, psync), dest, source, static_cast<size_t>(nreduce), op);
}

}  // namespace

Communicator& team_comm(const char* routine, pgas::Team* t) {
  if (!t->coll_state) [[unlikely]] {
    Result<Communicator*> c = tessera::coll::comm_create_team(t);
    if (!c.is_ok()) log::fatal("{}: cannot make a communicator for the {}: {}", routine, t->describe(), c.status().message());
    t->coll_state = c.value();
  }
  return *static_cast<Communicator*>(t->coll_state);
}

void make_team_comm(const char* routine, pgas::Team* t) {
  // Not in a replacement that waits to join (pgas/resilient.h): the others made theirs long ago.
  if (tessera::coll::resilient_job() && !tessera::pgas::joining()) (void)team_comm(routine, t);
}

void release_team_comm(pgas::Team* t) {
  if (!t || !t->coll_state) return;
  tessera::coll::comm_destroy(static_cast<Communicator*>(t->coll_state));
  t->coll_state = nullptr;
}

void release_all_comms() {
  release_team_comm(pgas::team_world());
  release_team_comm(pgas::team_shared());
  release_set_comms();
}

}  // namespace tessera::capi::coll

using namespace tessera::capi::coll;

extern "C" {

// ---- Teams: broadcast, collect, fcollect, alltoall, alltoalls in every type of the RMA table and the mem forms.
#define TS_DEF_TEAM_COLL(T, N)                                                                                \
  int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root) {        \
    return team_broadcast("shmem_" #N "_broadcast", team, dest, source, nelems, sizeof(T), PE_root);          \
  }                                                                                                           \
  int shmem_##N##_collect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                       \
    return team_collect("shmem_" #N "_collect", team, dest, source, nelems, sizeof(T));                       \
  }                                                                                                           \
  int shmem_##N##_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                      \
    return team_fcollect("shmem_" #N "_fcollect", team, dest, source, nelems, sizeof(T));                     \
  }                                                                                                           \
  int shmem_##N##_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems) {                      \
    return team_alltoall("shmem_" #N "_alltoall", team, dest, source, nelems, sizeof(T));                     \
  }                                                                                                           \
  int shmem_##N##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,        \
                            size_t nelems) {                                                                  \
    return team_alltoalls("shmem_" #N "_alltoalls", team, dest, source, dst, sst, nelems, sizeof(T));         \
  }
TESSERA_RMA_TYPES(TS_DEF_TEAM_COLL)

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root) {
  return team_broadcast("shmem_broadcastmem", team, dest, source, nelems, 1, PE_root);
}
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return team_collect("shmem_collectmem", team, dest, source, nelems, 1);
}
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return team_fcollect("shmem_fcollectmem", team, dest, source, nelems, 1);
}
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return team_alltoall("shmem_alltoallmem", team, dest, source, nelems, 1);
}
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems) {
  return team_alltoalls("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}

// ---- Team reductions (and/or/xor, max/min, sum/prod; complex: sum/prod) and 1.6 scans.
#define TS_DEF_REDUCE(T, N, OP, FN)                                                                           \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce) {                \
    return team_reduce("shmem_" #N "_" #OP "_reduce", team, dest, source, nreduce, Op::FN);                   \
  }
#define TS_DEF_REDUCE_BIT(T, N) \
  TS_DEF_REDUCE(T, N, and, kBand) TS_DEF_REDUCE(T, N, or, kBor) TS_DEF_REDUCE(T, N, xor, kBxor)
#define TS_DEF_REDUCE_MINMAX(T, N) TS_DEF_REDUCE(T, N, max, kMax) TS_DEF_REDUCE(T, N, min, kMin)
#define TS_DEF_REDUCE_ARITH(T, N) TS_DEF_REDUCE(T, N, sum, kSum) TS_DEF_REDUCE(T, N, prod, kProd)
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

// ---- Active sets (deprecated): barrier, sync, broadcast32/64, collect32/64, fcollect32/64, alltoall32/64,
// alltoalls32/64 and the *_to_all reductions. pWrk is accepted and not used.
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  Communicator& c = set_of("shmem_barrier", PE_start, logPE_stride, PE_size, pSync);
  pgas::quiet();
  run("shmem_barrier", c, Kind::kBarrier, Args{});
}

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  run("shmem_sync", set_of("shmem_sync", PE_start, logPE_stride, PE_size, pSync), Kind::kBarrier, Args{});
}

#define TS_DEF_ASET(BITS)                                                                                     \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root, int PE_start,        \
                             int logPE_stride, int PE_size, long* pSync) {                                    \
    const char* r = "shmem_broadcast" #BITS;                                                                  \
    Communicator& c = set_of(r, PE_start, logPE_stride, PE_size, pSync);                                      \
    broadcast(r, c, dest, source, checked_extent(r, dest, source, nelems, BITS / 8), PE_root, false);         \
  }                                                                                                           \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,      \
                           int PE_size, long* pSync) {                                                        \
    const char* r = "shmem_collect" #BITS;                                                                    \
    Communicator& c = set_of(r, PE_start, logPE_stride, PE_size, pSync);                                      \
    size_t bytes = pgas::checked_bytes(r, nelems, BITS / 8);                                                  \
    if (bytes && !source) pgas::fail_null(r, "source", bytes);                                                \
    collect(r, c, dest, source, bytes);                                                                       \
  }                                                                                                           \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,     \
                            int PE_size, long* pSync) {                                                       \
    const char* r = "shmem_fcollect" #BITS;                                                                   \
    Communicator& c = set_of(r, PE_start, logPE_stride, PE_size, pSync);                                      \
    fcollect(r, c, dest, source, checked_extent(r, dest, source, nelems, BITS / 8));                          \
  }                                                                                                           \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,     \
                            int PE_size, long* pSync) {                                                       \
    const char* r = "shmem_alltoall" #BITS;                                                                   \
    Communicator& c = set_of(r, PE_start, logPE_stride, PE_size, pSync);                                      \
    alltoall(r, c, dest, source, checked_extent(r, dest, source, nelems, BITS / 8));                          \
  }                                                                                                           \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                             int PE_start, int logPE_stride, int PE_size, long* pSync) {                      \
    const char* r = "shmem_alltoalls" #BITS;                                                                  \
    Communicator& c = set_of(r, PE_start, logPE_stride, PE_size, pSync);                                      \
    checked_extent(r, dest, source, nelems, BITS / 8);                                                        \
    alltoalls(r, c, dest, source, dst, sst, nelems, BITS / 8);                                                \
  }
TS_DEF_ASET(32)
TS_DEF_ASET(64)

#define TS_DEF_TOALL(T, N, OP, FN)                                                                            \
  void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce, int PE_start, int logPE_stride,       \
                                 int PE_size, T* pWrk, long* pSync) {                                         \
    active_reduce("shmem_" #N "_" #OP "_to_all", dest, source, nreduce, PE_start, logPE_stride, PE_size,      \
                  pSync, Op::FN);                                                                             \
  }
#define TS_DEF_TOALL_BIT(T, N) \
  TS_DEF_TOALL(T, N, and, kBand) TS_DEF_TOALL(T, N, or, kBor) TS_DEF_TOALL(T, N, xor, kBxor)
#define TS_DEF_TOALL_MINMAX(T, N) TS_DEF_TOALL(T, N, max, kMax) TS_DEF_TOALL(T, N, min, kMin)
#define TS_DEF_TOALL_ARITH(T, N) TS_DEF_TOALL(T, N, sum, kSum) TS_DEF_TOALL(T, N, prod, kProd)
TESSERA_TOALL_BIT_TYPES(TS_DEF_TOALL_BIT)
TESSERA_TOALL_MINMAX_TYPES(TS_DEF_TOALL_MINMAX)
TESSERA_TOALL_ARITH_TYPES(TS_DEF_TOALL_ARITH)

}  // extern "C"
