#include "pgas/peers.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <utility>

#include "base/config.h"
#include "base/rank_table.h"
#include "base/trace.h"
#include "pgas/amo.h"
#include "pgas/runtime.h"

namespace tessera::pgas {

int g_routed_count = 0;
const transport::Transport* g_routed[kMaxRouted] = {};

namespace {
// What connect_peers chose and registered, per peer: finalize unregisters it, and a test that reroutes a
// peer gets it back from here.
std::vector<const transport::Transport*> g_chosen;
std::vector<transport::PeerMemory> g_mem;
// Mappings of replaced peers (remap_peer) with the transport that made each, unmapped at finalize.
std::vector<std::pair<const transport::Transport*, transport::PeerMemory>> g_retired;

void collect_routed(const Runtime& r) {
  g_routed_count = 0;
  for (size_t pe = 0; pe < r.transports.size(); ++pe) {
    const transport::Transport* t = r.transports[pe];
    if (r.bases[pe] || std::find(g_routed, g_routed + g_routed_count, t) != g_routed + g_routed_count) continue;
    if (g_routed_count == kMaxRouted)
      log::fatal("PE {}: more than {} transports without a mapping in use (kMaxRouted)", pe, kMaxRouted);
    g_routed[g_routed_count++] = t;
  }
}

// "0-3,5" from a sorted list.
std::string pe_ranges(const std::vector<int>& pes) {
  std::string s;
  for (size_t i = 0; i < pes.size();) {
    size_t j = i;
    while (j + 1 < pes.size() && pes[j + 1] == pes[j] + 1) ++j;
    s += fmt::format("{}{}", s.empty() ? "" : ",", pes[i]);
    if (j > i) s += fmt::format("-{}", pes[j]);
    i = j + 1;
  }
  return s;
}
}  // namespace

namespace {
const config::Var<std::string> kHostId{
    "TESSERA_HOST_ID", "",
    "Host identity of this PE: PEs with equal identities share memory, others reach each other over the network "
    "(UCX). Default: the host name and the boot id"};
}  // namespace

namespace {
// The kernel's boot id: one per machine and boot (empty when it cannot be read).
std::string boot_id() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return boot;
}
}  // namespace

std::string host_identity(int pe) {
  if (const RankTable* t = rank_table()) {
    const RankTable::Host* h = t->host_of(pe);
    if (!h) log::fatal("TESSERA_RANK_TABLE={}: PE {} is not listed under any host", t->path, pe);
    if (!kHostId.is_set()) return h->name;
  }
  if (kHostId.is_set()) {
    if (kHostId.get().empty() || kHostId.get().size() > 100)
      log::fatal("TESSERA_HOST_ID={:?}: expected 1 to 100 characters", kHostId.get());
    return kHostId.get();
  }
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  const std::string boot = boot_id();
  return boot.empty() ? std::string(host) : fmt::format("{} ({})", host, boot);
}

std::string machine_identity() {
  std::string boot = boot_id();
  if (!boot.empty()) return boot;
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

Status one_pe_allgather(const void* mine, void* all, size_t bytes) {
  if (bytes) std::memcpy(all, mine, bytes);  // copy-ok: start-up exchange
  return Status::ok();
}

Status connect_peers(Runtime& r, const std::string* hosts, const bootstrap::Backend* boot,
                     const PeerSource* sources) {
  const size_t n = static_cast<size_t>(r.n_pes);
  const transport::JobView job{.my_pe = r.my_pe, .n_pes = r.n_pes, .hosts = hosts, .my_heap = r.my_base,
                               .heap_bytes = r.seg_size, .my_data = r.data_base, .data_bytes = r.data_size,
                               .allgather = boot ? boot->allgather : one_pe_allgather};
  int count = 0;
  const transport::Transport* const* table = transport::all(&count);
  for (int i = 0; i < count; ++i)
    if (table[i]->open) TS_RETURN_IF_ERROR(table[i]->open(job));
  r.transports.assign(n, nullptr);
  r.messages.assign(n, nullptr);
  g_chosen.assign(n, nullptr);
  g_mem.assign(n, transport::PeerMemory{});
  r.host_of.assign(n, 0);
  r.n_hosts = 0;
  for (int pe = 0; pe < r.n_pes; ++pe) {
    int h = 0;
    while (h < pe && hosts[h] != hosts[pe]) ++h;
    r.host_of[static_cast<size_t>(pe)] = h == pe ? r.n_hosts++ : r.host_of[static_cast<size_t>(h)];
  }
  const transport::PeerInfo me{r.my_pe, hosts[r.my_pe]};
  for (int pe = 0; pe < r.n_pes; ++pe) {
    const transport::PeerInfo peer{pe, hosts[pe]};
    const bool gone = sources && pe != r.my_pe && sources[pe].pid == 0;
    const transport::Transport* t =
        gone ? transport::gone() : transport::choose(me, peer, transport::kMaps | transport::kRma);
    if (!t) {
      std::string tried;
      for (int i = 0; i < count; ++i) tried += fmt::format("{}{}", i ? ", " : "", table[i]->name);
      return make_status(Code::kUnsupported, "PE {} runs on host {}, PE {} on {}: no transport of this build "
                         "reaches it (tried {})", pe, hosts[pe], r.my_pe, hosts[r.my_pe], tried);
    }
    transport::PeerMemory m{.pe = pe, .my_pe = r.my_pe, .job_id = r.job_id, .heap_bytes = r.seg_size,
                            .data_bytes = r.data_size, .my_heap = r.my_base, .my_data = r.data_base};
    if (sources && !gone) m.pid = sources[pe].pid, m.heap_fd = sources[pe].heap_fd, m.data_fd = sources[pe].data_fd;
    TS_RETURN_IF_ERROR(t->map(&m));
    r.transports[static_cast<size_t>(pe)] = t;
    if (!(t->caps & transport::kMaps) && !gone) {
      r.messages[static_cast<size_t>(pe)] = transport::choose(me, peer, transport::kMessages);
      if (!r.messages[static_cast<size_t>(pe)])
        return make_status(Code::kUnsupported, "PE {} on host {}: no transport of this build carries messages to "
                           "it", pe, hosts[pe]);
    }
    r.bases[static_cast<size_t>(pe)] = m.heap;
    if (r.data_size) r.data_bases[static_cast<size_t>(pe)] = m.data;
    g_chosen[static_cast<size_t>(pe)] = t;
    g_mem[static_cast<size_t>(pe)] = std::move(m);
  }
  collect_routed(r);
  return Status::ok();
}

Status remap_peer(Runtime& r, int pe, const PeerSource& from) {
  const size_t i = static_cast<size_t>(pe);
  if (g_chosen[i] != transport::gone() && !(g_chosen[i]->caps & transport::kMaps))
    return make_status(Code::kUnsupported, "PE {}'s replacement runs on another host: growing back is "
                       "supported within one host", pe);
  transport::PeerMemory m{.pe = pe, .my_pe = r.my_pe, .job_id = r.job_id, .heap_bytes = r.seg_size,
                          .data_bytes = r.data_size, .my_heap = r.my_base, .my_data = r.data_base,
                          .pid = from.pid, .heap_fd = from.heap_fd, .data_fd = from.data_fd};
  // The replacement runs on this host (the launcher started it here): the shm record maps it.
  const transport::PeerInfo me{r.my_pe, "this host"}, peer{pe, "this host"};
  const transport::Transport* shm = transport::choose(me, peer, transport::kMaps);
  TS_RETURN_IF_ERROR(shm->map(&m));
  g_retired.emplace_back(g_chosen[i], g_mem[i]);
  r.bases[i] = m.heap;
  if (r.data_size) r.data_bases[i] = m.data;
  r.transports[i] = shm;
  r.messages[i] = nullptr;
  g_mem[i] = std::move(m);
  g_chosen[i] = shm;
  collect_routed(r);
  return Status::ok();
}

void disconnect_peers(Runtime& r) {
  for (auto& [t, m] : g_retired) t->unmap(&m);
  g_retired.clear();
  for (size_t pe = 0; pe < g_chosen.size(); ++pe)
    if (g_chosen[pe]) g_chosen[pe]->unmap(&g_mem[pe]);
  g_chosen.clear();
  g_mem.clear();
  r.transports.clear();
  r.messages.clear();
  g_routed_count = 0;
  int count = 0;
  const transport::Transport* const* table = transport::all(&count);
  for (int i = count - 1; i >= 0; --i)  // reverse order of open (transport.h)
    if (table[i]->close) table[i]->close();
}

std::string describe_peers(const Runtime& r) {
  int count = 0;
  const transport::Transport* const* table = transport::all(&count);
  // "shm for PEs 0-1; ucx for PEs 2-3" for the memory paths, then " (messages: tcp for PEs 2-3)".
  auto list = [&](const std::vector<const transport::Transport*>& path) {
    std::string s;
    for (int i = 0; i < count; ++i) {
      std::vector<int> pes;
      for (int pe = 0; pe < r.n_pes; ++pe)
        if (path[static_cast<size_t>(pe)] == table[i]) pes.push_back(pe);
      if (pes.empty()) continue;
      s += fmt::format("{}{} for PE{} {}", s.empty() ? "" : "; ", table[i]->name, pes.size() > 1 ? "s" : "",
                       pe_ranges(pes));
    }
    return s;
  };
  const std::string messages = list(r.messages);
  return list(r.transports) + (messages.empty() ? "" : " (messages: " + messages + ")");
}

void set_transport_for_test(int pe, const transport::Transport* t) {
  Runtime& r = rt();
  const size_t i = static_cast<size_t>(pe);
  r.transports[i] = t ? t : g_chosen[i];
  r.bases[i] = t ? nullptr : g_mem[i].heap;
  if (r.data_size) r.data_bases[i] = t ? nullptr : g_mem[i].data;
  collect_routed(r);
}

transport::PeerMemory mapping_for_test(int pe) { return g_mem[static_cast<size_t>(pe)]; }

void routed_put(const char* routine, const void* dest, const void* src, size_t bytes, int pe) {
  if (bytes == 0) return;
  if (!src) fail_null(routine, "source", bytes);
  trace::Scope traced(trace::Cat::kRma, "put", "routed",
                      {.k0 = "bytes", .a0 = static_cast<int64_t>(bytes), .k1 = "pe", .a1 = pe});
  rt().transports[static_cast<size_t>(pe)]->put(pe, watch_offset(dest), src, bytes);
}

void routed_put_nbi(const char* routine, const void* dest, const void* src, size_t bytes, int pe) {
  const transport::Transport* t = rt().transports[static_cast<size_t>(pe)];
  if (!t->put_nbi) return routed_put(routine, dest, src, bytes, pe);
  if (bytes == 0) return;
  if (!src) fail_null(routine, "source", bytes);
  trace::Scope traced(trace::Cat::kRma, "put_nbi", "routed",
                      {.k0 = "bytes", .a0 = static_cast<int64_t>(bytes), .k1 = "pe", .a1 = pe});
  t->put_nbi(pe, watch_offset(dest), src, bytes);
}

void routed_get(const char* routine, void* dest, const void* src, size_t bytes, int pe) {
  if (bytes == 0) return;
  if (!dest) fail_null(routine, "destination", bytes);
  trace::Scope traced(trace::Cat::kRma, "get", "routed",
                      {.k0 = "bytes", .a0 = static_cast<int64_t>(bytes), .k1 = "pe", .a1 = pe});
  rt().transports[static_cast<size_t>(pe)]->get(dest, pe, watch_offset(src), bytes);
}

uint64_t routed_atomic(const char* routine, const void* sym, size_t size, transport::AtomicOp op, uint64_t value,
                       uint64_t cond, int pe) {
  const uint64_t off = watch_offset(sym);
  if (off % size != 0) fail_misaligned(routine, sym, size);
  return rt().transports[static_cast<size_t>(pe)]->atomic(pe, off, size, op, value, cond);
}

void routed_put_signal(const char* routine, const void* dest, const void* src, size_t bytes, const uint64_t* sig,
                       uint64_t signal, int sig_op, int pe) {
  if (bytes && !src) fail_null(routine, "source", bytes);
  if (sig_op != transport::kSignalSet && sig_op != transport::kSignalAdd) fail_bad_signal_op(routine, sig_op);
  if (watch_offset(sig) % sizeof(uint64_t) != 0) fail_misaligned(routine, sig, sizeof(uint64_t));
  rt().transports[static_cast<size_t>(pe)]->put_signal(pe, watch_offset(dest), src, bytes, watch_offset(sig), signal,
                                                       static_cast<transport::SignalOp>(sig_op));
}

void routed_fence() {
  for (int i = 0; i < g_routed_count; ++i) g_routed[i]->fence();
}
void routed_quiet() {
  trace::Scope traced(trace::Cat::kRma, "quiet", "routed");
  for (int i = 0; i < g_routed_count; ++i) g_routed[i]->quiet();
}
void routed_session(bool start) {
  for (int i = 0; i < g_routed_count; ++i)
    if (g_routed[i]->batch) g_routed[i]->batch(start);
}
void routed_progress() {
  for (int i = 0; i < g_routed_count; ++i)
    if (g_routed[i]->progress) g_routed[i]->progress();
}

}  // namespace tessera::pgas
