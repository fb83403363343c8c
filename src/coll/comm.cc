#include "coll/comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "coll/single_copy.h"
#include "coll/dispatch.h"
#include "coll/register.h"
#include "coll/hier.h"
#include "coll/resilience.h"
#include "coll/select/select.h"
#include "pgas/runtime.h"
#include "pgas/team.h"
#include "sync/wait.h"
#include "transport/shm/peer_copy.h"
#include "transport/shm/segment.h"

namespace tessera::coll {
namespace {
const config::Var<uint64_t> kBuffSize{
    "TESSERA_BUFFSIZE", uint64_t{8} << 20,
    "Bytes of collective staging memory per PE and communicator (split into 4 pipelined slots); larger "
    "slots mean fewer steps for large messages"};
const config::Var<std::string> kTestStallRead{
    "TESSERA_TEST_STALL_READ", "",
    "Test hook for buffer reuse: PE:MICROS makes world PE PE sleep MICROS (1..100000) before each read of "
    "another member's staging slot or LL buffer in every communicator it belongs to, so that the members that "
    "write the next steps run ahead into the slots' reuse window; empty: off"};

// The PE and sleep of TESSERA_TEST_STALL_READ, read once; a malformed value ends the job naming it.
std::pair<int, uint32_t> stall_read() {
  static const std::pair<int, uint32_t> v = config::pe_and_number(kTestStallRead, 1, 100000, "MICROS (microseconds)");
  return v;
}

const config::Var<uint64_t> kP2pSize{"TESSERA_P2P_BUFFSIZE", uint64_t{256} << 10,
                                     "Bytes of send/recv staging per PE, peer and communicator"};

constexpr size_t kPage = 4096;
size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

std::mutex g_mu;
std::map<std::vector<int>, uint64_t> g_team_counts;             // comms created over each team's members
std::map<std::tuple<int, int, int>, uint64_t> g_set_counts;   // ... and over each active set

size_t ctrl_bytes(int n) { return round_up(sizeof(Ctrl) + 2 * static_cast<size_t>(n) * sizeof(Line), kPage); }

// TESSERA_LOG=2: what a communicator will do, once, from its rank 0 (as NCCL_DEBUG=INFO prints its rings):
// the cost model's source, the single-copy path, and the algorithm chosen per collective and size class.
void log_choices(const Communicator& c) {
  const std::string members = c.size == 1 ? fmt::format("1 rank (world PE {})", c.world.front())
                                           : fmt::format("{} ranks (world PEs {}..{})", c.size, c.world.front(),
                                                         c.world.back());
  log::info("communicator of {}: cost model {}; single-copy path {}; {}", members, describe(c.model),
            c.cma ? "on" : "off",
            c.oversubscribed ? (c.all_bound ? "more PEs than CPUs, each bound to one" : "more PEs than CPUs, unbound")
                             : "a CPU per PE");
  for (Kind k : {Kind::kAllreduce, Kind::kReduceScatter, Kind::kAllgather, Kind::kBroadcast, Kind::kAlltoall}) {
    std::string line;
    for (size_t bytes : {size_t{8}, size_t{4} << 10, size_t{1} << 20, size_t{64} << 20}) {
      const Algorithm* a = select(make_shape(c, k, bytes), c.model, deterministic_mode()).algo;
      line += fmt::format("{}{} {}", line.empty() ? "" : ", ", config::format_size(bytes), a ? a->name : "none");
    }
    log::info("  {}: {}", kind_name(k), line);
  }
}

// This member's symmetric memory (the heap segment, the program's globals) in a communicator's map.
void own_symmetric(SymMap& sym, const pgas::Runtime& r) {
  sym.my_heap = r.my_base;
  sym.heap_bytes = r.seg_size;
  sym.my_data = r.data_size ? r.data_base : nullptr;
  sym.data_bytes = r.data_size;
}

// Creates the segments of a communicator whose members are `world` (in rank order). `sync` is a barrier
// over (at least) every member; it is called exactly twice on every member.
template <typename Sync>
Result<Communicator*> build(std::vector<int> world, int rank, uint64_t uid, Sync&& sync) {
  // Members on other hosts: the communicator of this host's members, and the two-level part over it.
  const pgas::Runtime& rt = pgas::rt();
  // An unknown TESSERA_COMPRESS or TESSERA_COMPRESS_ALLGATHER ends the job on one host too, not only across hosts.
  (void)default_compress();
  (void)default_allgather_compress();
  const int my_host = rt.host_of[static_cast<size_t>(world[static_cast<size_t>(rank)])];
  std::vector<int> here;
  int local_rank = 0;
  for (size_t i = 0; i < world.size(); ++i)
    if (rt.host_of[static_cast<size_t>(world[i])] == my_host) {
      if (static_cast<int>(i) == rank) local_rank = static_cast<int>(here.size());
      here.push_back(world[i]);
    }
  if (here.size() < world.size()) {
    TS_ASSIGN_OR_RETURN(Communicator* local, build(std::move(here), local_rank, uid, sync));
    auto c = std::make_unique<Communicator>();
    c->rank = rank;
    c->size = static_cast<int>(world.size());
    c->world = std::move(world);
    c->uid = uid;
    c->name = fmt::format("communicator {:04x} ({} rank{}, PE{} {}{})", uid & 0xffff, c->size, c->size > 1 ? "s" : "",
                          c->size > 1 ? "s" : "", c->world[0],
                          c->size > 1 ? fmt::format("..{}", c->world[static_cast<size_t>(c->size - 1)]) : "");
    // This member's own symmetric ranges, so that words name them; no member is mapped (the rows across
    // hosts never read a peer in place), and a registered buffer gets no region (register.h).
    own_symmetric(c->sym, pgas::rt());
    c->sym.heap.assign(static_cast<size_t>(c->size), nullptr);
    c->sym.data.assign(static_cast<size_t>(c->size), nullptr);
    c->hier = hier_create(*c, local);
    c->resilient = resilient_job();
    for (int pe : c->world) c->incarnations.push_back(pe_incarnation(pe));
    return c.release();
  }
  auto c = std::make_unique<Communicator>();
  c->rank = rank;
  c->size = static_cast<int>(world.size());
  c->world = std::move(world);
  c->uid = uid;
  const int n = c->size;
  size_t buff = std::max<size_t>(kBuffSize.get(), kSlots * kPage);
  c->slot_bytes = round_up(buff / kSlots, kPage);
  c->p2p_bytes = round_up(std::max<size_t>(kP2pSize.get(), 2 * kPage), 2 * kPage);
  const size_t cb = ctrl_bytes(n);
  c->seg_bytes = cb + kSlots * c->slot_bytes + static_cast<size_t>(n) * c->p2p_bytes;
  c->name = fmt::format("communicator {:04x} ({} rank{}, PE{} {}{})", uid & 0xffff, n, n > 1 ? "s" : "",
                        n > 1 ? "s" : "", c->world[0], n > 1 ? fmt::format("..{}", c->world[n - 1]) : "");
  c->seg.assign(static_cast<size_t>(n), nullptr);
  const pgas::Runtime& r = pgas::rt();
  std::string my_name;
  if (n == 1) {
    TS_ASSIGN_OR_RETURN(void* p, transport::shm::map_private(c->seg_bytes));
    c->seg[0] = static_cast<char*>(p);
    c->private_seg = true;
  } else {
    my_name = transport::shm::segment_name(r.job_id, fmt::format("coll{:016x}-{}", uid, c->world[rank]));
    TS_ASSIGN_OR_RETURN(void* p, transport::shm::create(my_name, c->seg_bytes));
    c->seg[rank] = static_cast<char*>(p);
  }
  Ctrl* mine = reinterpret_cast<Ctrl*>(c->seg[rank]);
  if (rank == 0) {
    mine->model = load_model();
    mine->model_ready.v.store(1, std::memory_order_release);
  }
  mine->peer.pid.store(getpid(), std::memory_order_relaxed);
  mine->peer.probe.store(reinterpret_cast<uint64_t>(&mine->peer.probe), std::memory_order_relaxed);
  // A sync that stops (resilient mode: sync::Interrupted out of a shrink's or a grow's meeting) leaves no
  // name and no mapping behind.
  struct Undo {
    Communicator* c;
    const std::string& name;
    ~Undo() {
      if (!c) return;
      if (!name.empty()) (void)transport::shm::unlink(name);
      for (char* s : c->seg)
        if (s) transport::shm::unmap(s, c->seg_bytes);
    }
  } undo{c.get(), my_name};
  sync();
  Status st;
  for (int m = 0; m < n && st.is_ok(); ++m) {
    if (m == rank) continue;
    auto p = transport::shm::open_map(
        transport::shm::segment_name(r.job_id, fmt::format("coll{:016x}-{}", uid, c->world[m])), c->seg_bytes);
    if (!p.is_ok()) st = p.status();
    else c->seg[m] = static_cast<char*>(p.value());
  }
  // Single-copy path: can I read every peer's memory? (Peers' fields were written before the first sync.)
  bool cma = st.is_ok() && cma_enabled();
  for (int m = 0; m < n && cma; ++m) {
    if (m == rank) continue;
    const Peer& p = reinterpret_cast<const Ctrl*>(c->seg[m])->peer;
    const uint64_t addr = p.probe.load(std::memory_order_relaxed);
    cma = transport::shm::peer_probe(p.pid.load(std::memory_order_relaxed), reinterpret_cast<const void*>(addr),
                                     addr);
  }
  mine->peer.cma_ok.store(cma ? 1 : 0, std::memory_order_relaxed);
  sync();
  undo.c = nullptr;
  if (!my_name.empty()) (void)transport::shm::unlink(my_name);
  if (!st.is_ok()) {
    for (char* s : c->seg)
      if (s) transport::shm::unmap(s, c->seg_bytes);
    return st;
  }
  for (int m = 0; m < n; ++m) {
    char* s = c->seg[m];
    c->ctrl.push_back(reinterpret_cast<Ctrl*>(s));
    c->staging.push_back(s + cb);
    c->p2p.push_back(s + cb + kSlots * c->slot_bytes);
  }
  c->model = c->ctrl[0]->model;
  // Every member reads the same n answers, so all agree on the path.
  c->cma = true;
  for (int m = 0; m < n; ++m) {
    c->pids.push_back(c->ctrl[m]->peer.pid.load(std::memory_order_relaxed));
    c->cma = c->cma && c->ctrl[m]->peer.cma_ok.load(std::memory_order_relaxed) == 1;
  }
  own_symmetric(c->sym, r);
  for (int m = 0; m < n; ++m) {
    const auto pe = static_cast<size_t>(c->world[m]);
    c->sym.heap.push_back(r.bases[pe]);
    c->sym.data.push_back(r.data_size ? r.data_bases[pe] : nullptr);
  }
  c->oversubscribed = sync::oversubscribed();  // this machine's PEs outnumber its CPUs (sync/wait.h)
  if (const auto [pe, us] = stall_read(); pe == c->world[static_cast<size_t>(c->rank)]) c->stall_read_us = us;
  // Waiting order and policy per member (comm.h: wait_order, spin_for), from the CPUs the PEs published at
  // start-up (sync::pe_cpu).
  const int my_cpu = sync::pe_cpu(c->world[rank]);
  c->all_bound = true;
  for (int m = 0; m < n; ++m) c->all_bound = c->all_bound && sync::pe_cpu(c->world[m]) >= 0;
  c->spin_for.assign(static_cast<size_t>(n), 0);
  for (int pass = 0; pass < 2; ++pass) {
    for (int m = 0; m < n; ++m) {
      if (m == rank) continue;
      const int cpu = sync::pe_cpu(c->world[m]);
      const bool apart = c->oversubscribed && my_cpu >= 0 && cpu >= 0 && cpu != my_cpu;
      if (apart != (pass == 1)) continue;
      c->wait_order.push_back(m);
      c->spin_for[static_cast<size_t>(m)] = apart;
    }
  }
  c->stores.forced = stage_stores_setting();
  c->p2p_sent.assign(static_cast<size_t>(n), 0);
  c->p2p_taken.assign(static_cast<size_t>(n), 0);
  c->checked.assign((static_cast<size_t>(n) + 63) / 64, 0);
  c->tag = 1;
  c->resilient = resilient_job();
  for (int pe : c->world) c->incarnations.push_back(pe_incarnation(pe));
  if (rank == 0 && log::level() >= log::Level::kInfo) log_choices(*c);
  return c.release();
}
}  // namespace

bool resilient_job() {
  const pgas::JobControl* jc = pgas::is_initialized() ? pgas::rt().control : nullptr;
  return jc && jc->resilient.load(std::memory_order_relaxed) != 0;
}
uint32_t job_failures() {
  pgas::JobControl* jc = pgas::is_initialized() ? pgas::rt().control : nullptr;
  return jc ? jc->failures.load(std::memory_order_acquire) : 0;
}
bool pe_failed(int pe) {
  pgas::JobControl* jc = pgas::is_initialized() ? pgas::rt().control : nullptr;
  return jc && jc->failed(pe);
}
uint32_t pe_incarnation(int pe) {
  pgas::JobControl* jc = pgas::is_initialized() ? pgas::rt().control : nullptr;
  return jc ? jc->incarnation(pe)->load(std::memory_order_acquire) : 0;
}
uint32_t pe_fail_index(int pe) {
  return pgas::rt().control->fail_index(pe)->load(std::memory_order_relaxed);
}
sync::FailRecords* pe_records(int pe) { return pgas::rt().control->records(pe); }
std::atomic<uint32_t>* job_revocations() { return &pgas::rt().control->revocations; }

Line* Communicator::sent(int m, int peer) const {
  return reinterpret_cast<Line*>(reinterpret_cast<char*>(ctrl[m]) + sizeof(Ctrl)) + peer;
}
Line* Communicator::taken(int m, int peer) const {
  return reinterpret_cast<Line*>(reinterpret_cast<char*>(ctrl[m]) + sizeof(Ctrl)) + size + peer;
}
char* Communicator::scratch_bytes(size_t n) {
  if (scratch.size() < n) scratch.resize(std::max(n, scratch.size() * 2));
  return scratch.data();
}

Result<Communicator*> comm_create_team(pgas::Team* team) {
  if (!pgas::is_initialized()) return invalid_arg("communicator creation: call shmem_init first");
  if (!team) return invalid_arg("communicator creation: the team is null");
  if (team->my_index < 0) return invalid_arg("communicator creation: this PE is not a member of the {}", team->describe());
  std::vector<int> world;
  for (int i = 0; i < team->size; ++i) world.push_back(team->world_pe(i));
  uint64_t count;
  {
    std::lock_guard lk(g_mu);
    count = g_team_counts[world]++;
  }
  uint64_t uid = 0x7e55e7a;
  for (int pe : world) uid = mix(uid, static_cast<uint64_t>(pe));
  uid = mix(mix(uid, static_cast<uint64_t>(team->size)), count);
  return build(std::move(world), team->my_index, uid, [team] { pgas::team_sync(team); });
}

Result<Communicator*> comm_create_set(int start, int stride, int size, const std::function<void()>& sync) {
  if (!pgas::is_initialized()) return invalid_arg("communicator creation: call shmem_init first");
  const int me = pgas::rt().my_pe;
  if (size < 1 || stride < 1 || (me - start) % stride != 0 || me < start || (me - start) / stride >= size)
    return invalid_arg("communicator creation: PE {} is not in the set of {} PEs from {} by {}", me, size, start, stride);
  uint64_t count;
  {
    std::lock_guard lk(g_mu);
    count = g_set_counts[{start, stride, size}]++;
  }
  // A key apart from the teams' (teams of the same shape may exist at the same time).
  uint64_t uid = mix(mix(mix(mix(0x5e7a5e7, static_cast<uint64_t>(start)), static_cast<uint64_t>(stride)),
                         static_cast<uint64_t>(size)), count);
  std::vector<int> world;
  for (int i = 0; i < size; ++i) world.push_back(start + i * stride);
  return build(std::move(world), (me - start) / stride, uid, sync);
}

Result<Communicator*> comm_create_pes(std::vector<int> pes, uint64_t key, const std::function<void()>& sync) {
  if (!pgas::is_initialized()) return invalid_arg("communicator creation: call shmem_init first");
  const int me = pgas::rt().my_pe, n_pes = pgas::rt().n_pes;
  int rank = -1;
  std::vector<bool> seen(static_cast<size_t>(n_pes));
  for (size_t i = 0; i < pes.size(); ++i) {
    const int pe = pes[i];
    if (pe < 0 || pe >= n_pes)
      return invalid_arg("communicator creation: member {} is PE {}, out of range: the job has {} PEs", i, pe, n_pes);
    if (seen[static_cast<size_t>(pe)]) return invalid_arg("communicator creation: PE {} is listed twice", pe);
    seen[static_cast<size_t>(pe)] = true;
    if (pe == me) rank = static_cast<int>(i);
  }
  if (rank < 0) return invalid_arg("communicator creation: PE {} is not among the {} members listed", me, pes.size());
  // The key names the communicator among those made this way; the members enter the name too, so that two
  // groups made with the same key by different owners still differ.
  uint64_t uid = mix(0x9e5c0117, key);
  for (int pe : pes) uid = mix(uid, static_cast<uint64_t>(pe));
  return build(std::move(pes), rank, uid, sync);
}

Result<Communicator*> comm_split(Communicator* parent, int color, int key) {
  // Everyone learns everyone's (color, key) through the parent.
  struct Entry {
    int64_t color, key;
  };
  std::vector<Entry> all(static_cast<size_t>(parent->size));
  Entry mine{color, key};
  Args a;
  a.send = &mine;
  a.recv = all.data();
  a.count = sizeof(Entry);
  a.dtype = DType::kUint8;
  TS_RETURN_IF_ERROR(dispatch(*parent, Kind::kAllgather, a));
  uint64_t uid = mix(mix(parent->uid, ++parent->split_count), static_cast<uint64_t>(color));
  auto parent_sync = [parent] { (void)dispatch(*parent, Kind::kBarrier, Args{}); };
  if (color < 0) {
    parent_sync();
    parent_sync();
    return static_cast<Communicator*>(nullptr);
  }
  std::vector<int> order;
  for (int i = 0; i < parent->size; ++i)
    if (all[i].color == color) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return all[x].key < all[y].key; });
  std::vector<int> world;
  int rank = -1;
  for (size_t i = 0; i < order.size(); ++i) {
    world.push_back(parent->world[order[i]]);
    if (order[i] == parent->rank) rank = static_cast<int>(i);
  }
  return build(std::move(world), rank, uid, parent_sync);
}

void comm_abandon(Communicator* c) {
  if (!c) return;
  deregister_all(*c);  // local: peers keep their own mappings of this member's registered pages
  for (char* s : c->seg)
    if (s) transport::shm::unmap(s, c->seg_bytes);
  hier_abandon(c->hier);
  delete c;
}

void comm_destroy(Communicator* c) {
  if (!c) return;
  // Nobody may still read this member's segment. A broken communicator (resilient mode) has no barrier
  // left: its members read nothing of each other's any more but its agreement and shrink lines, which a
  // member's own mapping keeps.
  if (pgas::is_initialized() && !c->broken) (void)dispatch(*c, Kind::kBarrier, Args{});
  deregister_all(*c);
  for (char* s : c->seg)
    if (s) transport::shm::unmap(s, c->seg_bytes);
  hier_destroy(c->hier);
  delete c;
}

}  // namespace tessera::coll
