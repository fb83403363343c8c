#include "coll/dispatch.h"

#include <cstring>

#include "base/log.h"
#include "base/trace.h"
#include "coll/engine.h"
#include "coll/resilience.h"
#include "coll/select/select.h"
#include "sync/where.h"

namespace tessera::coll {
namespace {

constexpr bool rooted(Kind k) { return kind_flags(k) & kRooted; }
constexpr bool reducing(Kind k) { return kind_flags(k) & kReducing; }
// Counts that differ per rank (alltoallv) or that only the root knows (gatherv, scatterv): every member must
// select the same algorithm and describe the call alike, so neither sees a size; the algorithm checks them.
constexpr bool counts_unshared(Kind k) { return kind_flags(k) & kUnshared; }
constexpr bool replicated(Kind k) { return kind_flags(k) & kReplicated; }
static_assert(rooted(Kind::kBroadcast) && rooted(Kind::kScatterv) && !rooted(Kind::kAllreduce));
static_assert(reducing(Kind::kReduceScatterv) && !reducing(Kind::kAllgather));
static_assert(counts_unshared(Kind::kAlltoallv) && counts_unshared(Kind::kGatherv) && !counts_unshared(Kind::kAllgatherv));
static_assert(replicated(Kind::kAllgatherv) && !replicated(Kind::kReduce));

// What an error names: the API routine of the call when one set it (Communicator::caller: the C/C++ API's
// run(), the OpenSHMEM collectives), else the collective.
const char* who(const Communicator& c, Kind kind) { return c.caller ? c.caller : kind_name(kind); }

}  // namespace

uint64_t hash_bytes(const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

namespace {

// The count arrays of the v variants and of gatherv/scatterv at the root: their sum is the call's total.
[[gnu::noinline]] Status check_counts(const Communicator& c, Kind kind, const Args& a, size_t* elems) {
  const char* name = who(c, kind);
  const size_t n = static_cast<size_t>(c.size);
  if (kind_flags(kind) & kVCounts) {
    const size_t* counts = kind == Kind::kAlltoallv ? a.scounts : a.rcounts;
    if (!a.rcounts || (kind == Kind::kAlltoallv && (!a.scounts || !a.sdispls || !a.rdispls)) ||
        (kind == Kind::kAllgatherv && !a.rdispls))
      return invalid_arg("{}: the count/displacement arrays must not be null", name);
    *elems = 0;
    for (size_t m = 0; m < n; ++m) *elems += counts[m];
    if (kind == Kind::kAllgatherv && a.count != a.rcounts[c.rank])
      return invalid_arg("{}: rank {} contributes {} elements but recvcounts[{}] is {}", name, c.rank, a.count, c.rank, a.rcounts[c.rank]);
  }
  if ((kind == Kind::kGatherv || kind == Kind::kScatterv) && c.rank == a.root) {
    // The root's arrays give every member's count; a member's own count is its sendcount (gatherv) or
    // recvcount (scatterv), checked against the root's inside the algorithm.
    const size_t* counts = kind == Kind::kGatherv ? a.rcounts : a.scounts;
    const size_t* displs = kind == Kind::kGatherv ? a.rdispls : a.sdispls;
    if (!counts || !displs) return invalid_arg("{}: the root's count/displacement arrays must not be null", name);
    if (counts[c.rank] != a.count)
      return invalid_arg("{}: the root (rank {}) {} {} elements itself but its counts[{}] is {}", name, c.rank,
                         kind == Kind::kGatherv ? "sends" : "receives", a.count, c.rank, counts[c.rank]);
    *elems = 0;
    for (size_t m = 0; m < n; ++m) {
      if (__builtin_add_overflow(*elems, counts[m], elems))
        return invalid_arg("{}: the counts overflow the address space", name);
    }
  }
  return Status::ok();
}

// Messages name the collective; they are built only on the error paths.
Status check_args(const Communicator& c, Kind kind, const Args& a, size_t* total) {
  const uint8_t f = kind_flags(kind);
  if (!valid(a.dtype)) [[unlikely]]
    return invalid_arg("{}: datatype {} is not one of the {} supported types (0..{})", who(c, kind),
                       static_cast<int>(a.dtype), kNumDTypes, kNumDTypes - 1);
  if ((f & kReducing) && !valid(a.op)) [[unlikely]]
    return invalid_arg("{}: reduction op {} is not sum/prod/min/max/avg/band/bor/bxor (0..{})", who(c, kind),
                       static_cast<int>(a.op), kNumOps - 1);
  if ((f & kReducing) && !op_applies(a.dtype, a.op)) [[unlikely]]
    return invalid_arg("{}: reduction op {} does not apply to {} ({})", who(c, kind), op_name(a.op),
                       dtype_name(a.dtype), is_complex(a.dtype) ? "complex numbers have no order" : "not an integer type");
  if ((f & kRooted) && (a.root < 0 || a.root >= c.size)) [[unlikely]]
    return invalid_arg("{}: root {} is out of range: the communicator has {} ranks (0..{})", who(c, kind), a.root,
                       c.size, c.size - 1);
  const size_t es = dtype_size(a.dtype), n = static_cast<size_t>(c.size);
  size_t elems = a.count, tmp;
  if (f & (kVCounts | kUnshared)) [[unlikely]]
    TS_RETURN_IF_ERROR(check_counts(c, kind, a, &elems));
  if (__builtin_mul_overflow(elems, es * n, &tmp)) [[unlikely]]
    return invalid_arg("{}: {} elements of {} bytes on {} ranks overflow the address space", who(c, kind), elems, es, n);
  *total = elems;
  if (elems == 0 || kind == Kind::kBarrier) return Status::ok();
  const bool is_root = c.rank == a.root;
  bool need_send = !(f & kSendAtRoot) || is_root, need_recv = !(f & kRecvAtRoot) || is_root;
  if (kind == Kind::kGatherv) need_send = a.count > 0, need_recv = is_root;
  if (kind == Kind::kScatterv) need_send = is_root, need_recv = a.count > 0;
  if (kind == Kind::kAllgatherv) need_send = a.count > 0;
  if (need_send && !a.send) [[unlikely]]
    return invalid_arg("{}: send buffer is null with a count of {}", who(c, kind), a.count);
  if (need_recv && !a.recv) [[unlikely]]
    return invalid_arg("{}: receive buffer is null with a count of {}", who(c, kind), a.count);
  return Status::ok();
}

// The common call's checks without building a Status: false sends the call through check_args, which
// finds and names what is wrong (or accepts what this skips: count arrays, counts from 2^32).
inline bool args_plainly_ok(const Communicator& c, Kind kind, const Args& a) {
  const uint8_t f = kind_flags(kind);
  if ((f & (kVCounts | kUnshared)) || !valid(a.dtype) || ((f & kReducing) && !(valid(a.op) && op_applies(a.dtype, a.op))))
    return false;
  if ((f & kRooted) && static_cast<unsigned>(a.root) >= static_cast<unsigned>(c.size)) return false;
  if (a.count >> 32) return false;  // below 2^32, count * element size * ranks cannot overflow
  if (a.count == 0 || kind == Kind::kBarrier) return true;
  const bool is_root = c.rank == a.root;
  const bool need_send = !(f & kSendAtRoot) || is_root, need_recv = !(f & kRecvAtRoot) || is_root;
  return (a.send || !need_send) && (a.recv || !need_recv);
}

}  // namespace

Shape make_shape(const Communicator& c, Kind kind, size_t bytes) {
  return Shape{.kind = kind, .n = c.size, .bytes = bytes, .slot_bytes = c.slot_bytes,
               .oversubscribed = c.oversubscribed, .cma = c.cma, .bound = c.all_bound, .net = c.net};
}

const Algorithm* row_for(const Shape& s, const ModelParams& m, const Algorithm* force, bool* forced) {
  if (force && deterministic_mode() && !force->canonical) force = nullptr;  // order beats the request
  if (forced) *forced = force != nullptr;
  if (force) return force->kind == s.kind && fits(*force, s) ? force : nullptr;
  return select(s, m, deterministic_mode()).algo;
}

namespace {
// The algorithm for a call that missed the one-entry cache (remembered there unless forced).
[[gnu::noinline]] Result<const Algorithm*> pick(Communicator& c, Kind kind, const Args& a, size_t bytes,
                                                const Algorithm* force) {
  Shape s = make_shape(c, kind, bytes);
  s.dtype = a.dtype;
  s.op = a.op;
  s.symmetric = a.symmetric;
  bool forced = false;
  const Algorithm* algo = row_for(s, c.model, force, &forced);
  if (forced) {
    if (!algo)
      return make_status(Code::kUnsupported, "{}: algorithm {} does not support {} bytes on {} ranks", who(c, kind),
                         force->name, s.bytes, c.size);
    return algo;  // a forced row is not cached
  }
  if (!algo) return make_status(Code::kUnsupported, "{}: no algorithm supports {} bytes on {} ranks", who(c, kind), s.bytes, c.size);
  c.last_kind = kind;
  c.last_bytes = s.bytes;
  c.last_symmetric = a.symmetric;
  c.last_algo = algo;
  return algo;
}
}  // namespace

namespace {
// Communicator::where_stride, computed once per communicator.
[[gnu::noinline]] int32_t members_stride(Communicator& c) {
  const int32_t stride = c.size > 1 ? c.world[1] - c.world[0] : 1;
  bool strided = true;
  for (int m = 1; m < c.size; ++m) strided = strided && c.world[m] - c.world[m - 1] == stride;
  return c.where_stride = strided ? stride : 0;
}

// A row across hosts: it runs the collectives of the host-local communicator and messages between hosts
// (coll/hier.h), each of which checks and records itself.
[[gnu::noinline]] Status compose(Communicator& c, const Algorithm& algo, Kind kind, const Args& a, size_t bytes) {
  const uint64_t traced = trace::g_on ? trace::coll_begin() : 0;
  Status st = algo.compose(c, a);
  if (traced) [[unlikely]] trace::coll_end(traced, kind_name(kind), algo.name, bytes, 0);
  return st;
}
}  // namespace

namespace {
// The call once its row is known: the engine's run under an Exec (or the row across hosts), the thorough
// check when asked, and the call closed. Shared by dispatch and run_resolved, inlined into both.
[[gnu::always_inline]] inline Status run_row(Communicator& c, Kind kind, const Args& a, const Algorithm* algo,
                                             size_t per_rank_bytes, size_t total) {
  if (algo->compose) [[unlikely]] return compose(c, *algo, kind, a, per_rank_bytes);
  const size_t es = dtype_size(a.dtype);
  CallDesc d;
  d.kind = kind;
  d.dtype = a.dtype;
  d.op = reducing(kind) ? a.op : Op::kSum;
  d.algo = algo->id;
  d.root = rooted(kind) ? a.root : -1;
  d.count = counts_unshared(kind) ? 0 : total;
  const uint64_t t0 = stage_call_begin(c, kind, per_rank_bytes);
  const uint64_t traced = trace::g_on ? trace::coll_begin() : 0;  // TESSERA_TRACE: the call and its steps
  static const int check = check_level();
  const bool thorough = check >= 1 && replicated(kind) && c.size > 1;
  // The thorough check below is a stepped exchange, whose waits start once the peer's call is recorded. An LL
  // call records itself only when it publishes or waits, which one with nothing to move (count 0) never
  // does: under the check it is opened stepped, recorded at once, or every member would wait for the others.
  Exec ex(c, d, !algo->ll || thorough);
  uint64_t steps = algo->run(ex, a);
  uint64_t h = 0;
  if (thorough) {
    // Thorough check: every member publishes a hash of its result and compares everyone's.
    size_t bytes = (kind == Kind::kAllgather ? total * static_cast<size_t>(c.size) : total) * es;
    if (kind == Kind::kAllgatherv) bytes = total * es;  // assumes a packed layout
    h = hash_bytes(a.recv, bytes);
    ex.step(steps);
    std::memcpy(ex.out(steps), &h, sizeof h);
    ex.publish(steps);
    for (int m = 0; m < c.size; ++m) {
      uint64_t theirs;
      std::memcpy(&theirs, ex.in(m, steps), sizeof theirs);
      if (theirs != h)
        log::fatal("TESSERA_CHECK=1: {} call #{} on {} ({} elements of {}): the result on rank {} (PE {}) differs "
                   "from the result on rank {} (PE {}) (hash {:016x} vs {:016x})",
                   kind_name(kind), c.seq, c.name, total, dtype_name(a.dtype), c.rank, c.world[c.rank], m,
                   c.world[m], h, theirs);
    }
    ++steps;
  }
  ex.end(steps, h);
  if (traced) [[unlikely]] trace::coll_end(traced, kind_name(kind), algo->name, per_rank_bytes, steps);
  stage_call_end(c, t0, per_rank_bytes);
  return Status::ok();
}

// Selection sees the per-rank payload; v variants use the average, and calls whose counts are not shared
// by every member none.
size_t per_rank_elems(const Communicator& c, Kind kind, const Args& a, size_t total) {
  if (counts_unshared(kind)) return 0;
  return (kind_flags(kind) & kVCounts) ? total / static_cast<size_t>(c.size) : a.count;
}
}  // namespace

namespace {
Status dispatch_row(Communicator& c, Kind kind, const Args& a, const Algorithm* force);
Status run_resolved_row(Communicator& c, const Resolved& r, const Args& a);

// Resilient mode (resilience.h): the call fails at once on a broken communicator, and stops in its next
// wait when a member fails or the communicator is revoked meanwhile.
template <typename F>
Status watched(Communicator& c, Kind kind, F&& f) {
  const char* routine = c.caller ? c.caller : kind_name(kind);
  TS_RETURN_IF_ERROR(broken_error(c, routine));
  CommWatch watch(c);
  sync::FailScope scope(&watch);
  try {
    if (watch.tripped()) watch.raise();  // a member failed, or `c` was revoked, before this call
    Status st = f();
    // A sub-call on the host's part of `c` (across hosts) stopped: `c` is broken too.
    if ((st.code() == Code::kPeerFailed || st.code() == Code::kRevoked) && !c.broken) [[unlikely]] {
      c.broken = true;
      const size_t colon = st.message().find(": ");  // named by this call's routine, not the sub-call's
      c.broken_why = colon == std::string::npos ? st.message() : st.message().substr(colon + 2);
      return Status(st.code(), fmt::format("{}: {}", routine, c.broken_why));
    }
    return st;
  } catch (const sync::Interrupted& e) {
    return interrupted(c, routine, e);
  }
}
}  // namespace

Status dispatch(Communicator& c, Kind kind, const Args& a, const Algorithm* force) {
  if (c.resilient) [[unlikely]]
    return watched(c, kind, [&] { return dispatch_row(c, kind, a, force); });
  return dispatch_row(c, kind, a, force);
}

namespace {
Status dispatch_row(Communicator& c, Kind kind, const Args& a, const Algorithm* force) {
  // The call this PE is in, for the hang report; its number (c.seq + 1) is the same on every member.
  const int32_t stride = c.where_stride != INT32_MIN ? c.where_stride : members_stride(c);
  sync::WhereScope where(sync::Call::kCollective, static_cast<uint16_t>(kind), c.seq + 1,
                         a.count * dtype_size(a.dtype), c.world[0], stride, c.size);
  size_t total = a.count;
  if (!args_plainly_ok(c, kind, a)) [[unlikely]]
    TS_RETURN_IF_ERROR(check_args(c, kind, a, &total));
  const size_t es = dtype_size(a.dtype);
  const size_t per_rank = per_rank_elems(c, kind, a, total);
  // One-entry cache: the same call again skips the shape and the cost evaluation. Not with compression
  // between hosts, whose rows depend on the type and operator too (hier/rows.cc: coded, coded_gather).
  const Algorithm* algo = c.last_algo;
  if (force || c.last_kind != kind || c.last_bytes != per_rank * es || c.last_symmetric != a.symmetric || !algo ||
      (c.net && (c.net->compress != Compress::kNone || c.net->gather_compress != Compress::kNone))) [[unlikely]] {
    Result<const Algorithm*> r = pick(c, kind, a, per_rank * es, force);
    if (!r.is_ok()) return r.status();
    algo = r.value();
  }
  return run_row(c, kind, a, algo, per_rank * es, total);
}
}  // namespace

Status resolve(Communicator& c, Kind kind, const Args& a, Resolved* out) {
  size_t total = a.count;
  TS_RETURN_IF_ERROR(check_args(c, kind, a, &total));
  const size_t bytes = per_rank_elems(c, kind, a, total) * dtype_size(a.dtype);
  Result<const Algorithm*> r = pick(c, kind, a, bytes, nullptr);
  if (!r.is_ok()) return r.status();
  *out = Resolved{.kind = kind, .algo = r.value(), .per_rank_bytes = bytes, .total = total};
  return Status::ok();
}

Status run_resolved(Communicator& c, const Resolved& r, const Args& a) {
  if (c.resilient) [[unlikely]]
    return watched(c, r.kind, [&] { return run_resolved_row(c, r, a); });
  return run_resolved_row(c, r, a);
}

namespace {
Status run_resolved_row(Communicator& c, const Resolved& r, const Args& a) {
  const int32_t stride = c.where_stride != INT32_MIN ? c.where_stride : members_stride(c);
  sync::WhereScope where(sync::Call::kCollective, static_cast<uint16_t>(r.kind), c.seq + 1,
                         a.count * dtype_size(a.dtype), c.world[0], stride, c.size);
  return run_row(c, r.kind, a, r.algo, r.per_rank_bytes, r.total);
}

}  // namespace

}  // namespace tessera::coll
