// Persistent plans (plan.h).
#include "coll/plan.h"

#include <array>
#include <tuple>

#include "coll/register.h"

namespace tessera::coll {
namespace {

// What each member says of its plan in Init's one exchange (an allgather of these words).
enum Word : size_t { kOk, kKind, kType, kOp, kRoot, kBytes, kRow, kCounts, kSendAt, kRecvAt, kWords };
constexpr uint64_t kArgsOk = 1, kAllMapped = 2;  // bits of word kOk

bool maps_every_member(const Communicator& c, uint64_t w) {
  if (w == 0) return false;
  for (int m = 0; m < c.size; ++m)
    if (!c.sym.at(m, w)) return false;
  return true;
}

// Copies the count arrays the call reads into the plan and points its Args at the copies; gatherv's and
// scatterv's are read at the root only, so a member that is not the root may pass anything there.
void keep_arrays(PlanState& p, size_t n, int rank) {
  const bool root_only = p.r.kind == Kind::kGatherv || p.r.kind == Kind::kScatterv;
  const bool reads = !root_only || p.a.root == rank;
  auto keep = [n, reads](const size_t* from, std::vector<size_t>& to) -> const size_t* {
    if (!from || !reads) return nullptr;
    to.assign(from, from + n);
    return to.data();
  };
  p.a.scounts = keep(p.a.scounts, p.scounts);
  p.a.sdispls = keep(p.a.sdispls, p.sdispls);
  p.a.rcounts = keep(p.a.rcounts, p.rcounts);
  p.a.rdispls = keep(p.a.rdispls, p.rdispls);
}

std::array<uint64_t, kWords> describe(const Communicator& c, const PlanState& p, const Status& resolved) {
  const Kind kind = p.r.kind;
  const uint8_t f = kind_flags(kind);
  std::array<uint64_t, kWords> d{};
  const auto [send_at, recv_at] = symmetric_words(c, kind, p.a);
  d[kOk] = (resolved.is_ok() ? kArgsOk : 0) |
           (!c.hier && maps_every_member(c, send_at) && maps_every_member(c, recv_at) ? kAllMapped : 0);
  d[kKind] = static_cast<uint64_t>(kind);
  d[kType] = static_cast<uint64_t>(p.a.dtype);
  d[kOp] = (f & kReducing) ? static_cast<uint64_t>(p.a.op) : 0;
  d[kRoot] = (f & kRooted) ? static_cast<uint64_t>(p.a.root) : 0;
  d[kBytes] = p.r.per_rank_bytes;
  d[kRow] = resolved.is_ok() ? static_cast<uint64_t>(p.r.algo->id) : 0;
  // The arrays every member must pass alike (reduce_scatterv's counts, allgatherv's counts and places).
  if ((f & kVCounts) && !(f & kUnshared) && p.a.rcounts) {
    const size_t n = static_cast<size_t>(c.size);
    d[kCounts] = hash_bytes(p.a.rcounts, n * sizeof(size_t)) ^
                 (p.a.rdispls ? hash_bytes(p.a.rdispls, n * sizeof(size_t)) * 3 : 0);
  }
  d[kSendAt] = send_at;
  d[kRecvAt] = recv_at;
  return d;
}

// The verdict on every member's description (the same on every member, which sees the same table).
Status agree(const char* routine, const Communicator& c, const std::vector<uint64_t>& all, const Status& mine) {
  auto at = [&](int m, Word w) { return all[static_cast<size_t>(m) * kWords + w]; };
  if (!mine.is_ok()) return mine;  // a member that refused says why; the others name the first that did
  for (int m = 0; m < c.size; ++m)
    if (!(at(m, kOk) & kArgsOk)) {
      return invalid_arg("{}: rank {} (PE {}) refused its arguments, so no member makes the plan", routine, m,
                         c.world[static_cast<size_t>(m)]);
    }
  for (int m = 1; m < c.size; ++m) {
    auto differs = [&](Word w, const char* what, auto show) -> Status {
      if (at(m, w) == at(0, w)) return Status::ok();
      return invalid_arg("{}: the members describe different calls: rank {} (PE {}) passes {} {} where rank 0 "
                         "(PE {}) passes {}", routine, m, c.world[static_cast<size_t>(m)], what, show(at(m, w)),
                         c.world[0], show(at(0, w)));
    };
    auto number = [](uint64_t v) { return std::to_string(v); };
    TS_RETURN_IF_ERROR(differs(kKind, "the collective", [](uint64_t v) { return std::string(kind_name(static_cast<Kind>(v))); }));
    TS_RETURN_IF_ERROR(differs(kType, "the type", [](uint64_t v) { return std::string(dtype_name(static_cast<DType>(v))); }));
    TS_RETURN_IF_ERROR(differs(kOp, "the operator", [](uint64_t v) { return std::string(op_name(static_cast<Op>(v))); }));
    TS_RETURN_IF_ERROR(differs(kRoot, "the root", number));
    TS_RETURN_IF_ERROR(differs(kBytes, "bytes per rank", number));
    TS_RETURN_IF_ERROR(differs(kCounts, "count arrays with hash", number));
    TS_RETURN_IF_ERROR(differs(kRow, "the row with id", number));
  }
  return Status::ok();
}

// Every member's buffers at the same symmetric offsets, every member mapped by every member here.
bool all_symmetric(const Communicator& c, const std::vector<uint64_t>& all) {
  for (int m = 0; m < c.size; ++m) {
    const uint64_t* d = &all[static_cast<size_t>(m) * kWords];
    if (!(d[kOk] & kAllMapped) || d[kSendAt] != all[kSendAt] || d[kRecvAt] != all[kRecvAt]) return false;
  }
  return true;
}

}  // namespace

Recorded*& recording() {
  static thread_local Recorded* slot = nullptr;
  return slot;
}

Status record(const char* routine, Communicator& c, Kind kind, const Args& a) {
  Recorded* r = recording();
  if (!r || r->done) return make_status(Code::kInternal, "{}: a plan records one call", routine);
  *r = Recorded{.c = &c, .kind = kind, .a = a, .done = true};
  return Status::ok();
}

Result<tesseraPlan*> plan_make(const char* routine, tesseraComm* h, const Recorded& rec, const Status& refused) {
  if (!rec.done) return make_status(Code::kInternal, "{}: the call made no collective to plan", routine);
  Communicator& c = *rec.c;
  auto p = std::make_shared<PlanState>();
  p->h = h;
  p->init = routine;
  p->a = rec.a;
  p->r.kind = rec.kind;
  keep_arrays(*p, static_cast<size_t>(c.size), c.rank);
  std::vector<uint64_t> all(static_cast<size_t>(c.size) * kWords);
  // One guarded section: the exchange, the verdict and the symmetric re-resolution, so that no member can
  // fail locally after the others have agreed.
  TS_RETURN_IF_ERROR(exclusive(routine, c, [&]() -> Status {
    Status mine = refused.is_ok() ? resolve(c, rec.kind, p->a, &p->r) : refused;
    const std::array<uint64_t, kWords> d = describe(c, *p, mine);
    TS_RETURN_IF_ERROR(dispatch(c, Kind::kAllgather, Args{.send = d.data(), .recv = all.data(), .count = kWords,
                                                          .dtype = DType::kUint64}));
    TS_RETURN_IF_ERROR(agree(routine, c, all, mine));
    if (c.size > 1 && all_symmetric(c, all)) {
      p->a.symmetric = true;
      TS_RETURN_IF_ERROR(resolve(c, rec.kind, p->a, &p->r));
      std::tie(p->send_word, p->recv_word) = symmetric_words(c, rec.kind, p->a);
      p->registered = in_registered(c, rec.kind, p->a);
    }
    return Status::ok();
  }));
  return new tesseraPlan{kPlanMagic, std::move(p)};
}

Status bad_plan(const char* routine, const tesseraPlan* h) {
  if (!h) return invalid_arg("{}: plan is null", routine);
  if (h->magic == kDeadHandleMagic) return invalid_arg("{}: plan {} was used after tesseraPlanFree", routine, (const void*)h);
  return invalid_arg("{}: {} is not a plan", routine, (const void*)h);
}

Status plan_run(const char* routine, PlanState& p) {
  TS_RETURN_IF_ERROR(check_comm(routine, p.h));
  Communicator& c = *p.h->c;
  return exclusive(routine, c, [&]() -> Status {
    // A plan made in place over registered buffers: they must still be registered (every member
    // deregisters alike, so every member refuses alike).
    if (p.registered && symmetric_words(c, p.r.kind, p.a) != std::pair{p.send_word, p.recv_word}) [[unlikely]]
      return invalid_arg("{}: the plan of {} works on registered buffers in place, and they are no longer "
                         "registered on {}", routine, p.init, c.name);
    return run_resolved(c, p.r, p.a);
  });
}

void plan_enqueue(Stream& s, std::shared_ptr<PlanState> p) {
  std::string what = std::string("tesseraStart (") + p->init + ")";
  s.enqueue(std::move(what), [p = std::move(p)] { throw_if_error(plan_run("tesseraStart", *p)); });
}

const char* plan_row(const PlanState& p) { return p.r.algo->name; }

void plan_free(tesseraPlan* h) {
  h->magic = kDeadHandleMagic;
  h->p.reset();
  keep_dead_handle(h);
}

}  // namespace tessera::coll
