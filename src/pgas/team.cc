#include "pgas/team.h"

#include <algorithm>
#include <bit>
#include <mutex>
#include <vector>

#include <fmt/ranges.h>

#include "base/config.h"
#include "pgas/amo.h"
#include "pgas/barrier.h"
#include "pgas/order.h"
#include "sync/barrier_forms.h"
#include "sync/wait.h"

namespace tessera::pgas {
namespace {
Team g_world, g_shared;
std::mutex g_mu;
uint64_t g_used_slots = 0;  // slots of the live teams this PE belongs to

bool has_unmapped_member(const Team* t) {
  for (int i = 0; i < t->size; ++i)
    if (!rt().bases[static_cast<size_t>(t->world_pe(i))]) return true;
  return false;
}

// The team of world PEs `pes` (in team order): strided when one stride describes them, else listed.
Team* make_team(std::vector<int> pes, int slot) {
  Team* t = new Team;
  const int n = static_cast<int>(pes.size());
  const int stride = n > 1 ? pes[1] - pes[0] : 1;
  bool strided = stride != 0 || n == 1;
  for (int i = 2; i < n && strided; ++i) strided = pes[static_cast<size_t>(i)] - pes[static_cast<size_t>(i - 1)] == stride;
  t->start = pes[0];
  t->stride = strided ? stride : 0;
  t->size = n;
  if (!strided) t->members = std::move(pes);
  t->my_index = t->index_of(rt().my_pe);
  t->slot = slot;
  t->spans_hosts = has_unmapped_member(t);
  return t;
}

// World PEs of `size` members of `parent` from its member `first` by `step` (in parent numbering).
std::vector<int> parent_pes(const Team* parent, int first, int step, int size) {
  std::vector<int> pes;
  for (int i = 0; i < size; ++i) pes.push_back(parent->world_pe(first + i * step));
  return pes;
}

// Reads the quiescent counters of the team's slot (at its first PE, or this PE's own round words for a team
// that spans hosts): called before any member can arrive.
void capture_bases(Team* t) {
  TeamSync* mine = t->sync_on(t->my_index);
  if (t->spans_hosts) {
    for (int k = 0; k < kMaxSyncRounds; ++k) t->round_base[k] = mine->rounds[k].load(std::memory_order_acquire);
  } else {
    TeamSync* s = t->root_sync();
    t->arrive_base = s->arrive.load(std::memory_order_acquire);
    t->gen_base = s->gen.load(std::memory_order_acquire);
  }
  t->epoch = 0;
  for (auto& e : mine->pe_epoch) e.v.store(0, std::memory_order_relaxed);
}

// This PE's address of a word of a team slot, as a symmetric object: it names the same word on every PE.
uint64_t* sym_word(std::atomic<uint64_t>& w) { return reinterpret_cast<uint64_t*>(&w); }

// Agrees on `want` free slots among the parent's members: returns the lowest free ones (-1 if none).
void agree_slots(Team* parent, int want, int* slots) {
  TeamSync* root = &reserved_of(rt().my_base)->teams[parent->slot];  // symmetric: the root's word by offset
  const int root_pe = parent->world_pe(0);
  uint64_t k = parent->split_count++;
  int w = static_cast<int>(k & 1);
  uint64_t mine;
  {
    std::lock_guard lk(g_mu);
    mine = g_used_slots;
  }
  atomic_fetch_op<transport::AtomicOp::kFetchOr>("team split", sym_word(root->split_mask[w]), mine, root_pe);
  team_sync(parent);
  uint64_t used = atomic_fetch("team split", sym_word(root->split_mask[w]), root_pe);
  for (int i = 0; i < want; ++i) {
    uint64_t free = ~used;
    if (free == 0) {
      slots[i] = -1;
      continue;
    }
    slots[i] = std::countr_zero(free);
    used |= uint64_t{1} << slots[i];
  }
  // The other parity word is next used by split k+1, which no member can reach before the sync below;
  // every member read it (split k-1) before the sync above.
  if (parent->my_index == 0) root->split_mask[w ^ 1].store(0, std::memory_order_release);  // root: own word
}

void take_slot(int slot) {
  std::lock_guard lk(g_mu);
  g_used_slots |= uint64_t{1} << slot;
}
}  // namespace

std::string Team::describe() const {
  if (this == &g_world) return fmt::format("world team ({} PEs)", size);
  if (this == &g_shared) return fmt::format("shared team ({} PEs)", size);
  if (members.empty())
    return fmt::format("team of {} PEs (world PEs {}, {}, ...; stride {})", size, start, start + stride, stride);
  const size_t shown = std::min<size_t>(members.size(), 8);
  return fmt::format("team of {} PEs (world PEs {}{})", size,
                     fmt::join(members.begin(), members.begin() + static_cast<ptrdiff_t>(shown), ", "),
                     shown < members.size() ? ", ..." : "");
}

Team* team_world() { return &g_world; }
Team* team_shared() { return &g_shared; }

void teams_init() {
  Runtime& r = rt();
  g_used_slots = 0b11;
  for (Team* t : {&g_world, &g_shared}) {
    *t = Team{};
    t->start = 0;
    t->stride = 1;
    t->size = r.n_pes;
    t->my_index = r.my_pe;
    t->slot = t == &g_world ? 0 : 1;
    t->predefined = true;
  }
  g_world.spans_hosts = has_unmapped_member(&g_world);
  // The shared team: the PEs whose memory this PE maps (its host), when they form a strided set (tessera-run
  // places PEs by host in blocks); otherwise this PE alone.
  std::vector<int> local;
  for (int pe = 0; pe < r.n_pes; ++pe)
    if (r.bases[static_cast<size_t>(pe)]) local.push_back(pe);
  bool strided = true;
  for (size_t i = 2; i < local.size(); ++i) strided = strided && local[i] - local[i - 1] == local[1] - local[0];
  if (!strided) local.assign(1, r.my_pe);
  g_shared.start = local[0];
  g_shared.stride = local.size() > 1 ? local[1] - local[0] : 1;
  g_shared.size = static_cast<int>(local.size());
  g_shared.my_index = g_shared.index_of(r.my_pe);
  // Fresh segments are zero: the bases are 0 and no capture is needed.
}

void teams_fini() { g_used_slots = 0; }

namespace {
// Oversubscribed, with every member bound to one CPU (tessera-run's layout): which other members share my
// CPU. False while some member has not published its CPU yet (the job's first barrier).
bool learn_cpus(Team* t) {
  const sync::PeWaitWords* w = sync::wait_context().pe_words;
  if (!w) return false;
  std::vector<int> mine;
  const int32_t me = w[t->world_pe(t->my_index)].cpu_plus1.load(std::memory_order_relaxed);
  for (int i = 0; i < t->size; ++i) {
    const int32_t c = w[t->world_pe(i)].cpu_plus1.load(std::memory_order_relaxed);
    if (c == 0) return false;
    if (i != t->my_index && c == me && me > 0) mine.push_back(i);
  }
  t->unbound_here = me < 0;
  t->same_cpu = std::move(mine);
  return true;
}
}  // namespace

// Central counter: each member adds one to the team's arrival count; the last to arrive opens the barrier
// (gen) and notifies every member. With more PEs than CPUs, a member first waits for the members bound to
// its own CPU, yielding the CPU to them at once (they need it to arrive), and only then waits for the gate,
// spinning first as every wait does: yielding on every poll would only hand the CPU to a member of its CPU
// that is waiting too, a process switch per member and barrier; the LL collectives wait the same way
// (coll/comm.h; measured in docs/journal.md, "Team barriers").
// A member not bound to one CPU (3 or 5 PEs on 2 CPUs, --bind-to none) cannot tell who shares its CPU, so
// it yields on every failed poll, as the collectives do there: spinning first held the CPU, for the whole
// spin phase, from members that still had to arrive.
// A team with members on other hosts: the dissemination barrier (sync/barrier_forms.h). In round k
// each member adds one to its own round-k word on the member 2^k after it, then waits until its own
// round-k word counts this sync: ceil(log2 n) rounds of one remote atomic each, and every wait is on local
// memory (woken by the writer's notify on this host, by the transport's progress thread from another).
// Counts are exact: a member's round-k word is written by one member once per sync, and a member leaves a
// sync only after its own words counted it, so the base read at creation (before the sync that ends the
// creation, which no member passes before every member read its bases) stays the base for the team's life.
void team_sync_rounds(Team* t) {
  TeamSync* mine = t->sync_on(t->my_index);
  const uint64_t epoch = ++t->epoch;
  mine->pe_epoch[epoch % 2].v.store(epoch, std::memory_order_relaxed);
  auto signal = [&](int k, int to_index) {
    const int to = t->world_pe(to_index);
    atomic_fetch_add("team sync", sym_word(mine->rounds[k]), uint64_t{1}, to);
    if (rt().bases[static_cast<size_t>(to)]) sync::notify(to);  // the waiter watches nothing (Watch::none)
  };
  auto wait = [&](int k, int from_index) {
    auto done = [&] { return mine->rounds[k].load(std::memory_order_acquire) - t->round_base[k] >= epoch; };
    auto describe = [&] {
      return fmt::format("{}{}team sync {} on the {}: round {} of the dissemination barrier waits for PE {}",
                         t->program_call ? t->program_call : "", t->program_call ? " (" : "", epoch, t->describe(),
                         k, t->world_pe(from_index)) + (t->program_call ? ")" : "");
    };
    sync::wait_until(done, describe, sync::Watch::none());
  };
  sync::barrier::dissemination(t->my_index, t->size, signal, wait);
}

// Up to kFlatSyncMax members on CPUs of their own, the barrier is flat: each member stores its epoch and
// waits until every other member's epoch shows this sync, one cache-line transfer on the critical path
// where the counter takes two (the last arrival's add, then its store of gen); with n members each polls
// n - 1 lines, so large teams keep the counter. With more PEs than CPUs the counter stays: the flat form
// measured slower there (docs/openshmem.md). Every member makes the same choice: the team's size and
// whether this machine's PEs outnumber its CPUs (sync::oversubscribed), which is the same for every member
// of a team on one host.
namespace {
// TESSERA_BARRIER=flat or counter forces one form for every team on one host (tests run both at PE counts
// the default would not choose); the job's PEs all read the same value.
constexpr int kFlatSyncMax = 8;
const config::Var<std::string> kBarrierForm{"TESSERA_BARRIER", "auto",
                                           "Barrier of the teams on one host: auto (flat up to 8 PEs on CPUs of "
                                           "their own, else an arrival counter), flat or counter"};
bool flat_sync(const Team* t) {
  static const size_t form = config::one_of(kBarrierForm, {"auto", "flat", "counter"});
  if (form != 0) return form == 1;
  return t->size <= kFlatSyncMax && !sync::oversubscribed();
}
}  // namespace

namespace {
// Resilient mode (docs/resilience.md): a sync of a team with a failed member cannot complete. Where the
// caller has no error to return (shmem_barrier_all, shmem_sync_all, the library's own syncs), it ends the
// job at once, naming the PE, instead of at its wait's deadline; shmem_team_sync returns an error instead
// (team_sync_or_error).
class TeamWatch final : public sync::FailWatch {
 public:
  TeamWatch(const Team* t, bool fatal) : t_(t), fatal_(fatal) {}
  bool tripped() override {
    JobControl* jc = rt().control;
    const uint32_t f = jc->failures.load(std::memory_order_acquire);
    if (f == seen_) return false;
    seen_ = f;
    for (int i = 0; i < t_->size && failed_ < 0; ++i)
      if (jc->failed(t_->world_pe(i))) failed_ = t_->world_pe(i);
    return failed_ >= 0;
  }
  [[noreturn]] void raise() override {
    if (!fatal_)
      throw sync::Interrupted(fmt::format("PE {} of the {} failed (the job went on without it: --on-failure "
                                          "continue); the team is broken: shrink (shmemx_team_shrink) or destroy it",
                                          failed_, t_->describe()),
                              {failed_}, false);
    log::fatal("a barrier of the {}: PE {} failed (resilient mode), and OpenSHMEM's team calls have no error to "
               "return: the job ends (the collective API's communicators can shrink instead: docs/resilience.md)",
               t_->describe(), failed_);
  }

 private:
  const Team* t_;
  bool fatal_;
  uint32_t seen_ = 0;
  int failed_ = -1;
};

void team_sync_watched(Team* t);

bool resilient() {
  const JobControl* jc = rt().control;
  return jc && jc->resilient.load(std::memory_order_relaxed);
}

// A member the launcher has marked failed, or -1.
int failed_member(const Team* t) {
  JobControl* jc = rt().control;
  if (!jc || jc->failures.load(std::memory_order_acquire) == 0) return -1;
  for (int i = 0; i < t->size; ++i)
    if (jc->failed(t->world_pe(i))) return t->world_pe(i);
  return -1;
}
}  // namespace

void team_sync(Team* t) {
  if (t->size == 1) return;
  if (resilient()) [[unlikely]] {
    TeamWatch watch(t, /*fatal=*/true);
    if (watch.tripped()) watch.raise();
    sync::FailScope scope(&watch);
    team_sync_watched(t);
    return;
  }
  team_sync_watched(t);
}

Status team_sync_or_error(Team* t) {
  if (t->size == 1 || !resilient()) {
    team_sync(t);
    return Status::ok();
  }
  if (t->broken)
    return make_status(Code::kPeerFailed, "the {} is broken by an earlier failure: shrink (shmemx_team_shrink) or "
                       "destroy it", t->describe());
  TeamWatch watch(t, /*fatal=*/false);
  try {
    if (watch.tripped()) watch.raise();
    sync::FailScope scope(&watch);
    team_sync_watched(t);
    return Status::ok();
  } catch (const sync::Interrupted& e) {
    t->broken = true;
    return make_status(Code::kPeerFailed, "{}", e.what());
  }
}

namespace {
void team_sync_watched(Team* t) {
  if (t->spans_hosts) {
    team_sync_rounds(t);
    return;
  }
  // Learned on entry, so that the member that arrives last learns too. Every member published its CPU
  // before it arrived at the job's first barrier, so from the second barrier on this succeeds.
  if (!t->cpus_learned && sync::oversubscribed()) t->cpus_learned = learn_cpus(t);
  TeamSync* s = t->root_sync();
  const uint64_t epoch = ++t->epoch;
  const bool flat = flat_sync(t);
  TeamSync* mine = t->sync_on(t->my_index);
  // Wakes members that sleep: every arrival in the flat form, the last one with the counter.
  auto notify_members = [&] {
    for (int i = 0; i < t->size; ++i)
      if (i != t->my_index) sync::notify(t->world_pe(i));
  };
  auto arrived = [&](int i) { return t->sync_on(i)->pe_epoch[epoch % 2].v.load(std::memory_order_acquire) >= epoch; };
  auto describe = [&] {
    std::string missing;
    int n_missing = 0;
    for (int i = 0; i < t->size; ++i) {
      uint64_t e = t->sync_on(i)->latest_epoch();
      if (e < epoch) {
        if (n_missing++ < 16) missing += fmt::format("{}PE {} (at team sync {})", missing.empty() ? "" : ", ",
                                                     t->world_pe(i), e);
      }
    }
    if (t->program_call)
      return fmt::format("{} #{} of this program on the {} (team sync {}, counting those that shmem_init, "
                         "allocations and collectives make); {} of {} PEs have not arrived: {}",
                         t->program_call, t->program_syncs, t->describe(), epoch, n_missing, t->size, missing);
    return fmt::format("team sync {} on the {} (made by the library: shmem_init, an allocation or a collective); "
                       "{} of {} PEs have not arrived: {}", epoch, t->describe(), n_missing, t->size, missing);
  };
  // The wait of both forms, until ready(): in the flat form every arrival notifies every member, with the
  // counter the opener does; puts meanwhile need not wake us (Watch::none). Each of the two waits has its own deadline
  // (TESSERA_TIMEOUT): a barrier whose members of my CPU arrive just before the first one expires may wait
  // up to twice as long before it reports.
  auto wait_open = [&](auto&& ready) {
    if (!t->same_cpu.empty()) {
      auto mine_arrived = [&] {
        for (int i : t->same_cpu)
          if (!arrived(i)) return false;
        return true;
      };
      sync::wait_yielding([&] { return ready() || mine_arrived(); }, describe, sync::Watch::none());
    }
    if (t->unbound_here) sync::wait_yielding(ready, describe, sync::Watch::none());
    else sync::wait_until(ready, describe, sync::Watch::none());
  };
  if (flat) {
    auto publish = [&] {
      mine->pe_epoch[epoch % 2].v.store(epoch, std::memory_order_release);
      notify_members();
    };
    sync::barrier::flat_one_wait(t->my_index, t->size, publish, arrived, wait_open);
    // Every member has arrived, so none reads my word of the previous sync's parity any more: ask for its
    // line now, and the next sync's store does not wait for the peers' copies to be invalidated.
    prefetch_for_write(&mine->pe_epoch[(epoch + 1) % 2]);
    return;
  }
  // The counter: my epoch word is only read by describe() (who is late) and by the members of my CPU.
  mine->pe_epoch[epoch % 2].v.store(epoch, std::memory_order_relaxed);
  auto arrive = [&] {
    const uint64_t ticket = s->arrive.fetch_add(1, std::memory_order_acq_rel) + 1 - t->arrive_base;
    return ticket == epoch * static_cast<uint64_t>(t->size);  // the last to arrive opens
  };
  auto open = [&] {
    // open the barrier and wake members that sleep
    s->gen.store(t->gen_base + epoch, std::memory_order_release);
    notify_members();
  };
  auto gate_open = [&] { return s->gen.load(std::memory_order_acquire) - t->gen_base >= epoch; };
  sync::barrier::counter(arrive, open, [&] { wait_open(gate_open); });
}
}  // namespace

void team_barrier(Team* t) {
  quiet();
  team_sync(t);
}

void barrier_all_internal() { team_barrier(&g_world); }

Status team_split_strided(Team* parent, int start, int stride, int size, int num_contexts, long config_mask,
                          Team** out) {
  *out = nullptr;
  // The members are parent PEs start, start + stride, ..., start + (size-1)*stride; a negative stride
  // lists them in decreasing order (allowed since OpenSHMEM 1.5). A zero stride names one PE only.
  const int64_t last = static_cast<int64_t>(start) + static_cast<int64_t>(stride) * (size - 1);
  if (start < 0 || start >= parent->size || size < 1 || (size > 1 && stride == 0) || last < 0 ||
      last >= parent->size) {
    // Every member sees the same arguments, so every member returns here: no sync is owed.
    return invalid_arg("shmem_team_split_strided: start {}, stride {}, size {} do not fit the parent {} "
                       "(PE numbers 0..{}{})",
                       start, stride, size, parent->describe(), parent->size - 1,
                       size > 1 && stride == 0 ? "; a zero stride allows size 1 only" : "");
  }
  int slot;
  agree_slots(parent, 1, &slot);
  Team* t = nullptr;
  Status st;
  if (slot < 0) {
    st = make_status(Code::kOutOfMemory, "shmem_team_split_strided: all {} team slots are in use on some PE of "
                     "the parent {}; destroy teams that are no longer needed", kMaxTeams, parent->describe());
  } else {
    std::vector<int> pes = parent_pes(parent, start, stride, size);
    if (std::find(pes.begin(), pes.end(), rt().my_pe) != pes.end())
      t = team_from_members(std::move(pes), slot, num_contexts, config_mask);
  }
  team_sync(parent);
  *out = t;
  return st;
}

Status team_split_2d(Team* parent, int xrange, int ncx, long mx, int ncy, long my, Team** xteam, Team** yteam) {
  *xteam = *yteam = nullptr;
  if (xrange < 1)
    return invalid_arg("shmem_team_split_2d: xrange {} must be at least 1 (parent {})", xrange,
                       parent->describe());
  if (xrange > parent->size) xrange = parent->size;
  int slots[2];
  agree_slots(parent, 2, slots);
  Status st;
  if (slots[0] < 0 || slots[1] < 0) {
    st = make_status(Code::kOutOfMemory, "shmem_team_split_2d: fewer than 2 of {} team slots are free on the "
                     "parent {}", kMaxTeams, parent->describe());
  } else {
    int i = parent->my_index, n = parent->size;
    int x = i % xrange, y = i / xrange;
    Team* xt = make_team(parent_pes(parent, y * xrange, 1, std::min(xrange, n - y * xrange)), slots[0]);
    Team* yt = make_team(parent_pes(parent, x, xrange, (n - x + xrange - 1) / xrange), slots[1]);
    xt->num_contexts = ncx;
    xt->config_mask = mx;
    yt->num_contexts = ncy;
    yt->config_mask = my;
    capture_bases(xt);
    capture_bases(yt);
    take_slot(slots[0]);
    take_slot(slots[1]);
    *xteam = xt;
    *yteam = yt;
  }
  team_sync(parent);
  return st;
}

void team_destroy(Team* t) {
  if (!t || t->predefined) return;
  if (resilient() && (t->broken || failed_member(t) >= 0)) [[unlikely]] {
    delete t;  // its slot stays taken (team.h)
    return;
  }
  // Everyone must be done with the slot before it can be reused: after this sync nobody arrives again.
  team_sync(t);
  {
    std::lock_guard lk(g_mu);
    g_used_slots &= ~(uint64_t{1} << t->slot);
  }
  delete t;
}

uint64_t team_slots_in_use() {
  std::lock_guard lk(g_mu);
  return g_used_slots;
}

Team* team_from_members(std::vector<int> members, int slot, int num_contexts, long config_mask) {
  Team* t = make_team(std::move(members), slot);
  t->num_contexts = num_contexts;
  t->config_mask = config_mask;
  capture_bases(t);
  take_slot(slot);
  return t;
}

int team_translate(const Team* src, int src_pe, const Team* dst) {
  if (!src || !dst || src_pe < 0 || src_pe >= src->size) return -1;
  return dst->index_of(src->world_pe(src_pe));
}

}  // namespace tessera::pgas
