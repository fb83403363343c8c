// Growing back: a communicator takes in the replacements of its failed members (grow.h).
#include "coll/grow.h"

#include <signal.h>

#include <algorithm>

#include "base/config.h"
#include "coll/resilience.h"
#include "pgas/heap.h"
#include "pgas/peers.h"
#include "pgas/resilient.h"
#include "pgas/runtime.h"
#include "sync/wait.h"

namespace tessera::coll {
namespace {
using pgas::JobControl;
using Board = JobControl::GrowBoard;

Board& board() { return *pgas::rt().control->grow_board(); }
uint32_t state_of(int pe) { return pgas::rt().control->state(pe)->load(std::memory_order_acquire); }
// Dead for a grow whose member `pe` had incarnation `inc` when it read the board: failed, or failed and
// replaced since (the launcher may move a failed PE on to kRestarting before anyone saw kFailed). A
// replacement that waits to join is alive.
bool dead(int pe, uint32_t inc) { return state_of(pe) == JobControl::kFailed || pe_incarnation(pe) != inc; }
// Bit `pe` of the board's members (joiners false) or joiners (true).
bool listed(const Board& b, int pe, bool joiners = false) {
  const int words = (pgas::rt().n_pes + 63) / 64;
  return (b.members[(joiners ? words : 0) + pe / 64].load(std::memory_order_relaxed) >> (pe % 64)) & 1;
}
void ring(const std::vector<int>& pes) {
  for (int pe : pes) sync::notify(pe);
}

// Test hook TESSERA_TEST_DIE_IN_GROW=PE:STEP: world PE PE (a PE started with the job) kills itself in its first
// grow, just before it posts meeting STEP (1 to 3), or just after it posts meeting 3 (STEP 4); empty: off.
const config::Var<std::string> kTestDieInGrow{
    "TESSERA_TEST_DIE_IN_GROW", "",
    "Test hook for growing back: PE:STEP makes world PE PE (started with the job) kill itself in its first "
    "communicator grow, before it posts the grow's meeting STEP (1 to 3), or after it posts meeting 3 (4); "
    "empty: off"};

void die_in_grow(int meeting, bool posted) {
  static const std::pair<int, uint32_t> v = config::pe_and_number(kTestDieInGrow, 1, 4, "STEP");
  static bool first = true;
  if (v.first != pgas::rt().my_pe || pgas::incarnation() != 0 || !first) return;
  if ((!posted && static_cast<uint32_t>(meeting) == v.second) || (posted && meeting == 3 && v.second == 4))
    ::raise(SIGKILL);
  if (posted && meeting == 3) first = false;
}

// The grow's meetings (1 to 3): each member posts its mark, then waits until every member's mark has reached
// the meeting. A member that dies after posting counts as arrived (its mark stays), so a meeting passes for
// all members or for none: it stops on every member when one dies before posting or one refuses
// (Board::refused), and when the leader gives the grow up.
struct Meeting {
  Board& b;
  uint32_t seq;
  const std::vector<int>& members;
  const std::vector<uint32_t>& incs;  // each member's incarnation (dead)
  int k = 0;
  void operator()() {
    JobControl* jc = pgas::rt().control;
    const uint32_t mark = 4 * seq + static_cast<uint32_t>(++k);
    die_in_grow(k, /*posted=*/false);
    jc->grow_mark(pgas::rt().my_pe)->store(mark, std::memory_order_release);
    ring(members);
    die_in_grow(k, /*posted=*/true);
    auto reached = [&](int pe) { return jc->grow_mark(pe)->load(std::memory_order_acquire) >= mark; };
    int gone = -1;
    bool all = false;
    sync::wait_until(
        [&] {
          gone = -1;
          all = true;
          for (size_t m = 0; m < members.size(); ++m) {
            const int pe = members[m];
            if (reached(pe)) continue;
            all = false;
            if (dead(pe, incs[m]) && !reached(pe)) gone = pe;  // its mark read again after its death was seen
          }
          return all || gone >= 0 || b.refused.load(std::memory_order_acquire) ||
                 b.seq.load(std::memory_order_acquire) != seq;
        },
        [&] {
          std::string waiting;
          for (int pe : members)
            if (!reached(pe)) waiting += fmt::format("{}{}", waiting.empty() ? "" : ", ", pe);
          return fmt::format("communicator grow: PEs {} to reach meeting {}", waiting, k);
        });
    if (all) return;
    if (gone >= 0) throw sync::Interrupted(fmt::format("PE {} failed while the communicator was growing", gone), {gone}, false);
    if (const uint32_t by = b.refused.load(std::memory_order_acquire))
      throw sync::Interrupted(fmt::format("PE {} could not take part in the grow (its own error says why)", by - 1), {}, false);
    throw sync::Interrupted("the grow's leader gave it up", {}, false);
  }
};

// The members as the board lists them, and those among them that wait to join.
void read_members(Board& b, std::vector<int>* members, std::vector<int>* joiners, std::vector<uint32_t>* incs) {
  const int n = pgas::rt().n_pes;
  for (int pe = 0; pe < n; ++pe)
    if (listed(b, pe)) {
      members->push_back(pe);
      incs->push_back(pe_incarnation(pe));
      if (listed(b, pe, /*joiners=*/true)) joiners->push_back(pe);
    }
  b.seen.fetch_add(1, std::memory_order_acq_rel);
}

// Steps 3 and 4 (grow.h), on every member; the leader closes the board at the end, whatever happened.
Result<Communicator*> take_in(const std::vector<int>& members, const std::vector<int>& joiners,
                              const std::vector<uint32_t>& incs, uint64_t key, uint32_t seq, bool leader,
                              const char* routine) {
  pgas::Runtime& r = pgas::rt();
  Board& b = board();
  Meeting meet{b, seq, members, incs};
  Communicator* made = nullptr;
  std::string why;
  try {
    for (int pe : joiners) {
      if (pe == r.my_pe) continue;
      if (Status st = pgas::remap_peer(r, pe, pgas::published_source(r, pe)); !st.is_ok())
        throw std::runtime_error(fmt::format("cannot map PE {}'s new segments: {}", pe, st.message()));
    }
    Result<Communicator*> res = comm_create_pes(members, key, [&meet] { meet(); });  // meetings 1 and 2
    if (!res.is_ok()) throw std::runtime_error(res.status().message());
    made = res.value();
    meet();  // 3: the commit; it passes for every member or for none
    if (pgas::joining()) {
      r.control->state(r.my_pe)->store(JobControl::kInitialized, std::memory_order_release);
      pgas::end_joining();
    }
    try {
      meet();  // 4: every replacement is alive for every member before any returns
    } catch (const sync::Interrupted&) {
      // A member died after the commit: the communicator stands for all, and its first call fails on all.
    }
    b.done.fetch_add(1, std::memory_order_acq_rel);  // done with the board
  } catch (const sync::Interrupted& e) {
    why = e.what();  // stopped at the commit at the latest: nobody keeps the communicator
  } catch (const std::runtime_error& e) {
    why = e.what();
    b.refused.store(static_cast<uint32_t>(r.my_pe) + 1, std::memory_order_release);
    ring(members);
  }
  if (!why.empty() && made) {
    comm_abandon(made);
    made = nullptr;
  }
  if (leader) {
    // Closed only once every member has read it (or died), so that none waits for a board gone by; after a
    // good grow, once every member is done with it.
    const uint32_t all = static_cast<uint32_t>(members.size());
    sync::wait_until(
        [&] {
          const bool all_read = b.seen.load(std::memory_order_acquire) >= members.size();
          if (made ? b.done.load(std::memory_order_acquire) >= all ||
                         (all_read && b.refused.load(std::memory_order_acquire))
                   : all_read)
            return true;
          for (size_t m = 0; m < members.size(); ++m)
            if (dead(members[m], incs[m])) return true;
          return false;
        },
        [&] { return fmt::format("communicator grow: {} members to finish with the grow", members.size()); });
    b.seq.fetch_add(1, std::memory_order_acq_rel);  // even: closed
    b.owner.store(0, std::memory_order_release);
    sync::notify_all();
  }
  if (!made) return make_status(Code::kPeerFailed, "{}: {}; shrink and grow again", routine, why);
  return made;
}
}  // namespace

Result<Communicator*> grow(Communicator& c) {
  constexpr const char* kRoutine = "tesseraCommGrow";
  if (!resilient_job())
    return invalid_arg("{}: the job is not in resilient mode (tessera-run --on-failure continue --restarts N)", kRoutine);
  if (c.hier)
    return make_status(Code::kUnsupported, "{}: {} spans hosts; growing back works within one host", kRoutine, c.name);
  pgas::Runtime& r = pgas::rt();
  int flag = 1;
  std::vector<int> failed;
  TS_RETURN_IF_ERROR(agree(c, &flag, &failed));
  std::vector<int> survivors;
  for (int pe : c.world)
    if (!std::binary_search(failed.begin(), failed.end(), pe)) survivors.push_back(pe);
  std::vector<int> candidates = c.former;
  candidates.insert(candidates.end(), failed.begin(), failed.end());
  const uint64_t key = c.uid ^ (0x6720'0000'0000ull + ++c.grows);
  const int leader = survivors.front();
  Board& b = board();
  uint32_t seq = 0;
  if (r.my_pe == leader) {
    // The replacements the launcher has started publish their segments (or fail) first.
    sync::wait_until(
        [&] {
          return std::none_of(candidates.begin(), candidates.end(),
                              [](int pe) { return state_of(pe) == JobControl::kRestarting; });
        },
        [&] { return fmt::format("{}: the replacements tessera-run started to publish their segments", kRoutine); });
    std::vector<int> members = survivors;
    for (int pe : candidates)
      if (state_of(pe) == JobControl::kJoining && pgas::published_source(r, pe).pid != 0) members.push_back(pe);
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    uint32_t free_board = 0;
    sync::wait_until(
        [&] {
          free_board = 0;
          return b.owner.compare_exchange_strong(free_board, static_cast<uint32_t>(leader) + 1,
                                                 std::memory_order_acq_rel);
        },
        [&] { return fmt::format("{}: the job's grow board, held by PE {}", kRoutine, free_board - 1); });
    b.done.store(0, std::memory_order_relaxed);
    b.refused.store(0, std::memory_order_relaxed);
    b.seen.store(0, std::memory_order_relaxed);
    b.key = key;
    b.heap_print = pgas::heap_fingerprint();
    b.n = static_cast<uint32_t>(members.size());
    const int words = (r.n_pes + 63) / 64;
    for (int w = 0; w < 2 * words; ++w) b.members[w].store(0, std::memory_order_relaxed);
    for (int pe : members) {
      b.members[pe / 64].fetch_or(uint64_t{1} << (pe % 64), std::memory_order_relaxed);
      if (std::find(survivors.begin(), survivors.end(), pe) == survivors.end())
        b.members[words + pe / 64].fetch_or(uint64_t{1} << (pe % 64), std::memory_order_relaxed);
    }
    seq = b.seq.fetch_add(1, std::memory_order_acq_rel) + 1;  // odd: open
    sync::notify_all();
  } else {
    sync::wait_until(
        [&] {
          seq = b.seq.load(std::memory_order_acquire);
          return (seq & 1) && b.owner.load(std::memory_order_acquire) == static_cast<uint32_t>(leader) + 1 &&
                 b.key == key;
        },
        [&] { return fmt::format("{}: PE {} (the grow's leader) to post the members", kRoutine, leader); });
  }
  std::vector<int> members, joiners;
  std::vector<uint32_t> incs;
  read_members(b, &members, &joiners, &incs);
  Result<Communicator*> made = take_in(members, joiners, incs, key, seq, r.my_pe == leader, kRoutine);
  if (made.is_ok()) {
    for (int pe : candidates)
      if (!std::binary_search(members.begin(), members.end(), pe)) made.value()->former.push_back(pe);
  }
  return made;
}

Result<Communicator*> join() {
  constexpr const char* kRoutine = "tesseraCommGrow (joining)";
  if (!pgas::is_initialized()) return invalid_arg("{}: call shmem_init first", kRoutine);
  if (!pgas::joining())
    return invalid_arg("{}: this PE (incarnation {}) is not a replacement waiting to join; the survivors pass "
                       "their communicator", kRoutine, pgas::incarnation());
  pgas::Runtime& r = pgas::rt();
  Board& b = board();
  // A grow this replacement tried already (it failed) may still be posted: only a later one is taken.
  static uint32_t tried = 0;
  uint32_t seq = 0;
  sync::wait_until(
      [&] {
        seq = b.seq.load(std::memory_order_acquire);
        return (seq & 1) && seq > tried && listed(b, r.my_pe, /*joiners=*/true);
      },
      [&] { return fmt::format("{}: the survivors to grow a communicator that takes PE {} in", kRoutine, r.my_pe); });
  tried = seq;
  std::vector<int> members, joiners;
  std::vector<uint32_t> incs;
  read_members(b, &members, &joiners, &incs);
  const uint64_t key = b.key;
  if (const uint64_t mine = pgas::heap_fingerprint(); mine != b.heap_print) {
    b.refused.store(static_cast<uint32_t>(r.my_pe) + 1, std::memory_order_release);
    ring(members);
    return invalid_arg("{}: this replacement's symmetric allocations differ from the survivors' (a replacement "
                       "must make the shmem_malloc calls its predecessor made before the failure, in the same "
                       "order, before it joins)", kRoutine);
  }
  return take_in(members, joiners, incs, key, seq, /*leader=*/false, kRoutine);
}

}  // namespace tessera::coll
