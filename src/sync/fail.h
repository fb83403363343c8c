// Resilient mode (docs/resilience.md): how a blocking call stops when a PE it depends on has failed.
//
// A call that can fail this way (a collective on a communicator, say) installs a FailWatch on its thread for
// its duration (FailScope). The slow phases of every wait on that thread (sync/wait.h: yield and sleep, not
// the first spin) ask the watch whether the call must stop; when it must, the wait ends its own bookkeeping
// and the watch throws Interrupted, which the call's entry catches and turns into its error. Waits with no
// watch installed behave as without resilient mode: they end the job at their deadline.
//
// Thread safety: a watch belongs to the thread that installed it.
#pragma once
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::sync {

// Thrown by FailWatch::raise: the call stopped because of `failed` (world PEs), or because its
// communicator was revoked (revoked, `failed` then possibly empty).
struct Interrupted : std::runtime_error {
  Interrupted(const std::string& what, std::vector<int> pes, bool by_revoke)
      : std::runtime_error(what), failed(std::move(pes)), revoked(by_revoke) {}
  std::vector<int> failed;
  bool revoked;
};

class FailWatch {
 public:
  // True when the call must stop (cheap while nothing failed: a load or two).
  virtual bool tripped() = 0;
  // Throws Interrupted describing why; called after tripped() returned true.
  [[noreturn]] virtual void raise() = 0;

 protected:
  ~FailWatch() = default;
};

inline thread_local FailWatch* t_fail_watch = nullptr;

// Installs `w` on this thread until the scope ends (scopes nest: the inner one is asked).
class FailScope {
 public:
  explicit FailScope(FailWatch* w) : prev_(t_fail_watch) { t_fail_watch = w; }
  ~FailScope() { t_fail_watch = prev_; }
  FailScope(const FailScope&) = delete;
  FailScope& operator=(const FailScope&) = delete;

 private:
  FailWatch* prev_;
};

// A PE's records for its communicators that span hosts (coll/resilience.cc), in the job's control segment
// (pgas::JobControl), where every PE of the job reads them; the PE is the only writer of its own. A failed
// PE's records stay, and what it wrote before it died is final. Rings: agreement records are found by
// (communicator uid, epoch), and a slot is written again only kAgree agreements of this PE later.
struct FailRecords {
  static constexpr int kAgree = 32, kRevoke = 8;
  struct Agree {
    std::atomic<uint64_t> uid, epoch;  // epoch last, release: the others are then readable
    std::atomic<uint32_t> failures, flag;
    // Odd while the record is written: a copier (the agent of tessera-run --hosts, which copies a PE's
    // records to the other hosts) takes a record whose version was even and the same before and after.
    std::atomic<uint32_t> version;
  };
  struct Revoke {
    std::atomic<uint64_t> uid, by;  // by: 1 + the revoker's rank, last, release
  };
  Agree agree[kAgree];
  Revoke revoke[kRevoke];
  std::atomic<uint32_t> agree_next, revoke_next;  // the writer's next slot
};

}  // namespace tessera::sync
