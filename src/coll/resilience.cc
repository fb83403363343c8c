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
  for (int pe : c.world)
    if (pe_failed(pe) && std::find(c.failed.begin(), c.failed.end(), pe) == c.failed.end()) c.failed.push_back(pe);
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
  return c.ctrl.empty() ? 0 : c.ctrl[static_cast<size_t>(c.rank)]->revoked.v.load(std::memory_order_acquire);
}

bool CommWatch::tripped() {
  if (revoked_by(c_) != 0) return true;
  refresh_failed(c_);
  return !c_.failed.empty();
}

void CommWatch::raise() {
  if (const uint64_t r = revoked_by(c_); r != 0)
    throw sync::Interrupted(fmt::format("{} was revoked by rank {} (PE {})", c_.name, r - 1, c_.world[r - 1]),
                            c_.failed, true);
  throw sync::Interrupted(fmt::format("{} of {} failed (the job went on without {}: --on-failure continue)",
                                      pes_text(c_.failed), c_.name, c_.failed.size() > 1 ? "them" : "it"),
                          c_.failed, false);
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
  if (c.hier) return make_status(Code::kUnsupported, "tesseraCommRevoke: {} spans hosts; resilient mode runs on one host", c.name);
  const uint64_t me = static_cast<uint64_t>(c.rank) + 1;
  for (int m = 0; m < c.size; ++m) {
    uint64_t expected = 0;  // the first revoker is the one named
    c.ctrl[static_cast<size_t>(m)]->revoked.v.compare_exchange_strong(expected, me, std::memory_order_acq_rel);
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

Status agree(Communicator& c, int* flag, std::vector<int>* failed) {
  if (c.hier) return make_status(Code::kUnsupported, "tesseraCommAgree: {} spans hosts; resilient mode runs on one host", c.name);
  const uint64_t e = ++c.agreements;
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
  // The failed set: the members among the first `failures` PEs the launcher marked, the largest count any
  // participant read; every survivor computes it from the same published counts.
  failed->clear();
  for (int pe : c.world)
    if (pe_failed(pe) && pe_fail_index(pe) < failures) failed->push_back(pe);
  std::sort(failed->begin(), failed->end());
  for (int pe : *failed)
    if (std::find(c.failed.begin(), c.failed.end(), pe) == c.failed.end()) c.failed.push_back(pe);
  std::sort(c.failed.begin(), c.failed.end());
  *flag = static_cast<int>(all);
  return Status::ok();
}

Result<Communicator*> shrink(Communicator& c) {
  if (c.hier) return make_status(Code::kUnsupported, "tesseraCommShrink: {} spans hosts; resilient mode runs on one host", c.name);
  int flag = 1;
  std::vector<int> failed;
  TS_RETURN_IF_ERROR(agree(c, &flag, &failed));
  std::vector<int> survivors, ranks;
  for (int m = 0; m < c.size; ++m)
    if (!std::binary_search(failed.begin(), failed.end(), c.world[static_cast<size_t>(m)])) {
      survivors.push_back(c.world[static_cast<size_t>(m)]);
      ranks.push_back(m);
    }
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

}  // namespace tessera::coll
