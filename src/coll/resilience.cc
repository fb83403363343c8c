// Resilient mode of the collective engine (resilience.h).
#include "coll/resilience.h"

#include <signal.h>

#include <algorithm>

#include <fmt/ranges.h>

#include "coll/engine.h"
#include "coll/hier.h"
#include "base/config.h"
#include "sync/wait.h"

namespace tessera::coll {
namespace {

std::string pes_text(const std::vector<int>& pes) {
  return fmt::format("PE{} {}", pes.size() > 1 ? "s" : "", fmt::join(pes, ", "));
}

// Rings every member's doorbell, so that a sleeping waiter re-checks what this member just published.
void ring_members(const Communicator& c) {
  for (int m = 0; m < c.size; ++m)
    if (m != c.rank) sync::notify(c.world[static_cast<size_t>(m)]);
}

// Adds the members the launcher has marked failed since the last look to c.failed.
void refresh_failed(Communicator& c) {
  const uint32_t f = job_failures();
  if (f == c.failures_seen) return;
  c.failures_seen = f;
  for (size_t m = 0; m < c.world.size(); ++m) {
    const int pe = c.world[m];
    // A member replaced since the communicator was made is gone from it as much as a failed one.
    const bool replaced = m < c.incarnations.size() && pe_incarnation(pe) != c.incarnations[m];
    if ((pe_failed(pe) || replaced) && std::find(c.failed.begin(), c.failed.end(), pe) == c.failed.end())
      c.failed.push_back(pe);
  }
  std::sort(c.failed.begin(), c.failed.end());
}

// The failed set of an agreement: the members among the first `failures` PEs the launcher marked, the
// largest count any participant read; every survivor computes it from the same published counts. They join
// c.failed.
void decide_failed(Communicator& c, uint32_t failures, std::vector<int>* failed) {
  failed->clear();
  for (int pe : c.world)
    if (pe_failed(pe) && pe_fail_index(pe) < failures) failed->push_back(pe);
  std::sort(failed->begin(), failed->end());
  for (int pe : *failed)
    if (std::find(c.failed.begin(), c.failed.end(), pe) == c.failed.end()) c.failed.push_back(pe);
  std::sort(c.failed.begin(), c.failed.end());
}

// Test hook TESSERA_TEST_DIE_IN_SHRINK=PE:STEP: world PE PE kills itself (SIGKILL) in its first shrink, just
// before it posts barrier STEP (1 or 2) of the attempt, or just after it posts barrier 2 (STEP 3); empty: off.
const config::Var<std::string> kTestDieInShrink{
    "TESSERA_TEST_DIE_IN_SHRINK", "",
    "Test hook for resilient mode: PE:STEP makes world PE PE kill itself in its first communicator shrink, "
    "before it posts the shrink's barrier STEP (1 or 2), or after it posts barrier 2 (3); empty: off"};

// Called before (posted false) and after posting barrier `barrier` of a shrink.
void die_in_shrink(const Communicator& c, uint64_t barrier, bool posted) {
  static const std::pair<int, uint32_t> v = config::pe_and_number(kTestDieInShrink, 1, 3, "STEP");
  if (v.first != c.world[static_cast<size_t>(c.rank)]) return;
  if ((!posted && barrier == v.second) || (posted && barrier == 2 && v.second == 3)) ::raise(SIGKILL);
}
}  // namespace

uint64_t revoked_by(const Communicator& c) {
  if (!c.hier) return c.ctrl.empty() ? 0 : c.ctrl[static_cast<size_t>(c.rank)]->revoked.v.load(std::memory_order_acquire);
  // Across hosts: the members' revocation records, looked at again only when the job has a new one. The
  // lowest rank that revoked is the one named (every reader finds the same once the records are in).
  const uint32_t n = job_revocations()->load(std::memory_order_acquire);
  if (n == c.revocations_seen) return c.revoked_seen;
  c.revocations_seen = n;
  for (int m = 0; m < c.size && !c.revoked_seen; ++m)
    for (const sync::FailRecords::Revoke& r : pe_records(c.world[static_cast<size_t>(m)])->revoke) {
      const uint64_t by = r.by.load(std::memory_order_acquire);
      if (by && r.uid.load(std::memory_order_relaxed) == c.uid) {
        c.revoked_seen = by;
        break;
      }
    }
  return c.revoked_seen;
}

bool CommWatch::tripped() {
  for (Communicator* c = &c_; c; c = c->parent) {
    refresh_failed(*c);
    if (revoked_by(*c) != 0 || !c->failed.empty()) {
      why_ = c;
      return true;
    }
  }
  return false;
}

void CommWatch::raise() {
  const Communicator& c = why_ ? *why_ : c_;
  if (const uint64_t r = revoked_by(c); r != 0)
    throw sync::Interrupted(fmt::format("{} was revoked by rank {} (PE {})", c.name, r - 1, c.world[r - 1]),
                            c.failed, true);
  throw sync::Interrupted(fmt::format("{} of {} failed (the job went on without {}: --on-failure continue)",
                                      pes_text(c.failed), c.name, c.failed.size() > 1 ? "them" : "it"),
                          c.failed, false);
}

Status interrupted(Communicator& c, const char* routine, const sync::Interrupted& e) {
  c.broken = true;
  c.broken_why = fmt::format("{}; the communicator is broken: agree, shrink (tesseraCommShrink) or destroy it", e.what());
  return Status(e.revoked ? Code::kRevoked : Code::kPeerFailed, fmt::format("{}: {}", routine, c.broken_why));
}

Status broken_error(const Communicator& c, const char* routine) {
  if (!c.broken) return Status::ok();
  return Status(revoked_by(c) != 0 ? Code::kRevoked : Code::kPeerFailed, fmt::format("{}: {}", routine, c.broken_why));
}

const std::vector<int>& known_failed(Communicator& c) {
  refresh_failed(c);
  return c.failed;
}

Status revoke(Communicator& c) {
  const uint64_t me = static_cast<uint64_t>(c.rank) + 1;
  if (c.hier) {
    // A record of this PE's, then the job's count (a watch that sees the count sees the record).
    sync::FailRecords& mine = *pe_records(c.world[static_cast<size_t>(c.rank)]);
    sync::FailRecords::Revoke& r =
        mine.revoke[mine.revoke_next.fetch_add(1, std::memory_order_relaxed) % sync::FailRecords::kRevoke];
    r.by.store(0, std::memory_order_relaxed);
    r.uid.store(c.uid, std::memory_order_relaxed);
    r.by.store(me, std::memory_order_release);
    job_revocations()->fetch_add(1, std::memory_order_acq_rel);
  } else {
    for (int m = 0; m < c.size; ++m) {
      uint64_t expected = 0;  // the first revoker is the one named
      c.ctrl[static_cast<size_t>(m)]->revoked.v.compare_exchange_strong(expected, me, std::memory_order_acq_rel);
    }
  }
  ring_members(c);
  if (!c.broken) {
    c.broken = true;
    c.broken_why = fmt::format("{} was revoked by rank {} (PE {}); the communicator is broken: agree, shrink "
                               "(tesseraCommShrink) or destroy it",
                               c.name, revoked_by(c) - 1, c.world[revoked_by(c) - 1]);
  }
  return Status::ok();
}

namespace {
// Agreement across hosts: the members' records in the control segment (sync::FailRecords) instead of the
// communicator's own blocks. A record is written as {epoch 0, uid, failures, flag, epoch}; a reader takes it
// once it reads epoch e with the communicator's uid. A slot is written again only kAgree agreements of its
// writer later, and a member gets at most one agreement of this communicator ahead of another.
void publish_across_hosts(const Communicator& c, uint64_t e, uint32_t failures, uint32_t flag) {
  sync::FailRecords& mine = *pe_records(c.world[static_cast<size_t>(c.rank)]);
  sync::FailRecords::Agree& a =
      mine.agree[mine.agree_next.fetch_add(1, std::memory_order_relaxed) % sync::FailRecords::kAgree];
  a.version.fetch_add(1, std::memory_order_relaxed);
  a.epoch.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  a.uid.store(c.uid, std::memory_order_relaxed);
  a.failures.store(failures, std::memory_order_relaxed);
  a.flag.store(flag, std::memory_order_relaxed);
  a.epoch.store(e, std::memory_order_release);
  a.version.fetch_add(1, std::memory_order_release);
}

// Member m's record of agreement e on `c`, or null while it has none.
const sync::FailRecords::Agree* find_across_hosts(const Communicator& c, int m, uint64_t e) {
  for (const sync::FailRecords::Agree& a : pe_records(c.world[static_cast<size_t>(m)])->agree)
    if (a.epoch.load(std::memory_order_acquire) == e && a.uid.load(std::memory_order_relaxed) == c.uid) return &a;
  return nullptr;
}
}  // namespace

Status agree(Communicator& c, int* flag, std::vector<int>* failed) {
  // An agreement ends for every member when each other one has published or failed; no failure watch stops
  // it midway (that would leave members at different agreements).
  sync::FailScope unwatched(nullptr);
  const uint64_t e = ++c.agreements;
  if (c.hier) {
    uint32_t failures = job_failures();
    publish_across_hosts(c, e, failures, static_cast<uint32_t>(*flag));
    ring_members(c);
    uint32_t all = static_cast<uint32_t>(*flag);
    for (int m = 0; m < c.size; ++m) {
      if (m == c.rank) continue;
      const int pe = c.world[static_cast<size_t>(m)];
      sync::wait_yielding([&] { return find_across_hosts(c, m, e) || pe_failed(pe); },
                          [&] { return fmt::format("agreement {} on {}: rank {} (PE {}) to publish its part or fail", e, c.name, m, pe); });
      if (const sync::FailRecords::Agree* a = find_across_hosts(c, m, e)) {
        all &= a->flag.load(std::memory_order_relaxed);
        failures = std::max(failures, a->failures.load(std::memory_order_relaxed));
      }
    }
    // A contributor on another host may have read a failure this host has not been told of yet (each host's
    // marks come from its agent, in the launcher's order): the set is decided once this host has them all.
    sync::wait_yielding([&] { return job_failures() >= failures; },
                        [&] { return fmt::format("agreement {} on {}: this host to learn of {} failures", e, c.name, failures); });
    decide_failed(c, failures, failed);
    *flag = static_cast<int>(all);
    return Status::ok();
  }
  AgreeSlot& mine = c.ctrl[static_cast<size_t>(c.rank)]->agree[e % 2];
  // The count first: every PE marked failed before it is visible to whoever sees this member's epoch.
  uint64_t failures = job_failures();
  mine.failures.store(failures, std::memory_order_relaxed);
  mine.flag.store(static_cast<uint32_t>(*flag), std::memory_order_relaxed);
  mine.epoch.store(e, std::memory_order_release);
  ring_members(c);
  uint32_t all = static_cast<uint32_t>(*flag);
  for (int m = 0; m < c.size; ++m) {
    if (m == c.rank) continue;
    const int pe = c.world[static_cast<size_t>(m)];
    const AgreeSlot& theirs = c.ctrl[static_cast<size_t>(m)]->agree[e % 2];
    // A member that agrees one call later writes the other slot, and cannot agree two later before this
    // member has published this one: the slot holds agreement e or an earlier one.
    coll_wait(c, [&] { return theirs.epoch.load(std::memory_order_acquire) == e || pe_failed(pe); },
            [&] { return fmt::format("agreement {} on {}: rank {} (PE {}) to publish its part or fail", e, c.name, m, pe); });
    // Read again after seeing the failure: what a failed member published is final, and every survivor
    // reads the same.
    if (theirs.epoch.load(std::memory_order_acquire) == e) {
      all &= static_cast<uint32_t>(theirs.flag.load(std::memory_order_relaxed));
      failures = std::max(failures, theirs.failures.load(std::memory_order_relaxed));
    }
  }
  decide_failed(c, static_cast<uint32_t>(failures), failed);
  *flag = static_cast<int>(all);
  return Status::ok();
}

namespace {
// Trips when a PE of `pes` has failed: a shrink's build stops, on this member, in its next wait for another.
class SurvivorsWatch final : public sync::FailWatch {
 public:
  SurvivorsWatch(const Communicator& c, const std::vector<int>& pes) : c_(c), pes_(pes) {}
  bool tripped() override {
    if (job_failures() == seen_) return false;
    seen_ = job_failures();
    for (int pe : pes_)
      if (pe_failed(pe)) {
        pe_ = pe;
        return true;
      }
    return false;
  }
  [[noreturn]] void raise() override {
    throw sync::Interrupted(fmt::format("PE {} failed while {} was shrinking", pe_, c_.name), {pe_}, false);
  }

 private:
  const Communicator& c_;
  const std::vector<int>& pes_;
  uint32_t seen_ = 0;
  int pe_ = -1;
};

// Shrink of a communicator across hosts. Its barriers are agreements on `c` (records in the control
// segment), which tell every survivor alike whether a survivor failed; the build's messages between hosts
// stop when one does (SurvivorsWatch), on some members and not others, so a last agreement decides for all
// whether the new communicator is kept.
Result<Communicator*> shrink_across_hosts(Communicator& c, const std::vector<int>& failed, std::vector<int> survivors) {
  uint64_t barrier = 0;
  auto sync = [&] {
    ++barrier;
    die_in_shrink(c, barrier, /*posted=*/false);
    int f = 1;
    std::vector<int> now;
    (void)agree(c, &f, &now);
    die_in_shrink(c, barrier, /*posted=*/true);
    for (int pe : now)
      if (!std::binary_search(failed.begin(), failed.end(), pe))
        throw sync::Interrupted(fmt::format("PE {} failed while {} was shrinking", pe, c.name), {pe}, false);
  };
  Communicator* made = nullptr;
  std::string why;
  {
    SurvivorsWatch watch(c, survivors);
    sync::FailScope scope(&watch);
    try {
      Result<Communicator*> r = comm_create_pes(survivors, c.uid ^ (0x5e1f'0000'0000ull + ++c.shrinks), sync);
      if (r.is_ok()) made = r.value();
      else why = r.status().message();
    } catch (const sync::Interrupted& e) {
      why = e.what();
    }
  }
  int kept = made != nullptr;
  std::vector<int> now;
  (void)agree(c, &kept, &now);
  if (kept && now == failed) return made;
  comm_abandon(made);
  if (why.empty()) why = now != failed ? fmt::format("a member of {} failed while it was shrinking", c.name)
                                       : fmt::format("another member of {} could not build the new communicator", c.name);
  return make_status(Code::kPeerFailed, "tesseraCommShrink: {}; shrink again", why);
}
}  // namespace

namespace {
Result<Communicator*> shrink_once(Communicator& c) {
  int flag = 1;
  std::vector<int> failed;
  TS_RETURN_IF_ERROR(agree(c, &flag, &failed));
  std::vector<int> survivors, ranks;
  for (int m = 0; m < c.size; ++m)
    if (!std::binary_search(failed.begin(), failed.end(), c.world[static_cast<size_t>(m)])) {
      survivors.push_back(c.world[static_cast<size_t>(m)]);
      ranks.push_back(m);
    }
  if (c.hier) return shrink_across_hosts(c, failed, std::move(survivors));
  // The survivors' barrier, on the old communicator's shrink lines: a survivor that fails meanwhile stops
  // the shrink (the others may shrink again). It fails alike on every survivor: a member's line, once
  // posted, stays, so a barrier passes for all or for none, and a member that dies after posting the last
  // one is a member of the new communicator for all (its first call fails on every survivor alike).
  const uint64_t base = c.shrink_syncs;
  auto sync = [&] {
    const uint64_t v = ++c.shrink_syncs;
    die_in_shrink(c, v - base, /*posted=*/false);
    c.ctrl[static_cast<size_t>(c.rank)]->shrink_sync.v.store(v, std::memory_order_release);
    ring_members(c);
    die_in_shrink(c, v - base, /*posted=*/true);
    for (int m : ranks) {
      const int pe = c.world[static_cast<size_t>(m)];
      const Line& l = c.ctrl[static_cast<size_t>(m)]->shrink_sync;
      coll_wait(c, [&] { return l.v.load(std::memory_order_acquire) >= v || pe_failed(pe); },
              [&] { return fmt::format("shrink of {}: rank {} (PE {}) to reach barrier {}", c.name, m, pe, v); });
      if (l.v.load(std::memory_order_acquire) < v)
        throw sync::Interrupted(fmt::format("PE {} failed while {} was shrinking", pe, c.name), {pe}, false);
    }
  };
  try {
    Result<Communicator*> r = comm_create_pes(survivors, c.uid ^ (0x5e1f'0000'0000ull + ++c.shrinks), sync);
    if (!r.is_ok()) return make_status(r.status().code(), "tesseraCommShrink: {}", r.status().message());
    return r;
  } catch (const sync::Interrupted& e) {
    return make_status(Code::kPeerFailed, "tesseraCommShrink: {}; shrink again", e.what());
  }
}

}  // namespace

Result<Communicator*> shrink(Communicator& c) {
  Result<Communicator*> r = shrink_once(c);
  if (r.is_ok()) {  // the members that failed out of it, whose replacements a grow takes in (grow.h)
    std::vector<int>& former = r.value()->former;
    former = c.former;
    former.insert(former.end(), c.failed.begin(), c.failed.end());
    std::sort(former.begin(), former.end());
    former.erase(std::unique(former.begin(), former.end()), former.end());
  }
  return r;
}

}  // namespace tessera::coll
