#include "coll/hier.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "coll/dispatch.h"
#include "coll/hier/net.h"
#include "coll/resilience.h"
#include "coll/select/link.h"
#include "pgas/runtime.h"
#include "transport/transport.h"

namespace tessera::coll {
namespace {

const config::Var<std::string> kCompress{
    "TESSERA_COMPRESS", "none",
    "The phase between hosts of float32 sum and average allreduces (and what is made of them) coded for the "
    "wire: none, bf16, fp8 (e4m3, a scale per block of 256) or int8 (the same), with error feedback; the "
    "host-local phases stay float32; tesseraCommSetCompression sets it per communicator"};

const config::Var<std::string> kCompressAllgather{
    "TESSERA_COMPRESS_ALLGATHER", "none",
    "The phase between hosts of float32 allgathers coded for the wire: none, bf16, fp8 or int8 (as "
    "TESSERA_COMPRESS); every member, the senders too, gets the decoded blocks; "
    "tesseraCommSetAllGatherCompression sets it per communicator"};

Compress compress_of(const config::Var<std::string>& v) {
  return static_cast<Compress>(config::one_of(v, {"none", "bf16", "fp8", "int8"}));
}

// The members' settings compared by one exchange (a uint64 allgather, never coded): a mode out of range on
// any member, or a member with another mode or flag, fails every member alike, with the same message.
Status agree_mode(const char* routine, Communicator& c, int mode, bool feedback) {
  const bool mine_ok = mode >= 0 && mode < kNumCompress;
  const uint64_t d[3] = {mine_ok ? 1u : 0u, static_cast<uint64_t>(mode), feedback ? 1u : 0u};
  std::vector<uint64_t> all(3 * static_cast<size_t>(c.size));
  TS_RETURN_IF_ERROR(dispatch(c, Kind::kAllgather, Args{.send = d, .recv = all.data(), .count = 3, .dtype = DType::kUint64}));
  if (!mine_ok)
    return invalid_arg("{}: mode {} is not tesseraCompressNone, Bf16, Fp8 or Int8 (0..{})", routine, mode, kNumCompress - 1);
  for (int m = 0; m < c.size; ++m) {
    const uint64_t* o = &all[3 * static_cast<size_t>(m)];
    if (!o[0]) return invalid_arg("{}: rank {} (PE {}) passed a mode out of range, so no member sets it", routine, m,
                                  c.world[static_cast<size_t>(m)]);
    if (o[1] != d[1] || o[2] != d[2])
      return invalid_arg("{}: rank {} (PE {}) sets {} with feedback {} where rank {} (PE {}) sets {} with feedback {}",
                         routine, m, c.world[static_cast<size_t>(m)], compress_name(static_cast<Compress>(o[1])),
                         o[2] ? "on" : "off", c.rank, c.world[static_cast<size_t>(c.rank)],
                         compress_name(static_cast<Compress>(mode)), feedback ? "on" : "off");
  }
  return Status::ok();
}

// The link measured once per process (the first communicator that spans hosts whose rank 0 is this PE).
std::mutex g_link_mu;
bool g_link_measured = false;
LinkParams g_link;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Between the first two hosts: the leaders' median ping-pong of 1 byte (latency), then 64 KiB and 1 MiB both
// ways (medians, alternated: the line through the two gives the burst rate, the rate of the bytes the
// sockets' buffers take, and the wake-up a transfer of 64 KiB pays on top, so that the estimates of those
// sizes are the medians themselves; the best of the 1 MiB transfers alone, taken before, read well above
// the rate the 64 KiB-1 MiB rows of the same jobs ran at; docs/hosts.md, "The model's wake-up"), then
// 16 MiB both ways at once, the traffic of the rings and exchanges the model prices (median of three after
// a warm-up; larger than the sockets' buffers, which a 4 MiB one-way probe fitted in: it read well above
// and below the link's rate, and the model then picked a slower row; docs/journal.md, "Across hosts"; its
// rate is that of the bytes beyond the burst), then 16 MiB one way answered by a byte (a tree's transfer;
// median of three), then every rail at once (what a host's streams carry together). Members of other hosts
// do nothing.
LinkParams measure_link(Communicator& c, Hier& h) {
  LinkParams l;
  std::snprintf(l.source, sizeof l.source, "measured");
  if (h.my_host > 1) return l;
  Net net{c, h};
  const int peer_host = 1 - h.my_host;
  const bool first = h.my_host == 0;
  const int lead = h.members[static_cast<size_t>(peer_host)][0];
  constexpr int kPings = 100, kWarm = 5, kStreams = 3, kBursts = 25;  // a few ms each; the medians steady
  constexpr size_t kBig = size_t{16} << 20;
  char byte = 0;
  std::vector<char> out, in;  // kBig each, made after the pings (their zeroing would delay one side)
  // One byte from the first host to `peer` and back.
  auto ping = [&](int peer) {
    if (first) {
      net.wait(peer, net.send(peer, &byte, 1), "link measurement", 1);
      net.wait(peer, net.recv(peer, &byte, 1), "link measurement", 1);
    } else {
      net.wait(peer, net.recv(peer, &byte, 1), "link measurement", 1);
      net.wait(peer, net.send(peer, &byte, 1), "link measurement", 1);
    }
  };
  // `bytes` (kBig at most) each way with `peer`: seconds.
  auto both_ways = [&](int peer, size_t bytes) {
    const auto t0 = std::chrono::steady_clock::now();
    net.exchange(peer, out.data(), bytes, peer, in.data(), bytes, "link measurement");
    return seconds_since(t0);
  };
  // The rate of a transfer's bytes beyond the burst, from the seconds it took (less `latency`).
  const double burst = LinkParams::kBurstBytes;
  auto beyond_burst = [&](double seconds, double latency) {
    const double rest = seconds - latency - l.wake - burst / l.burst_bw;
    // A transfer no slower than its burst alone (noise): priced at the burst rate throughout.
    return rest > 0 ? (static_cast<double>(kBig) - burst) / rest : l.burst_bw;
  };
  // kBig bytes from the first host to `peer`, which answers with a byte: seconds (on the first host).
  auto one_way = [&](int peer) {
    const auto t0 = std::chrono::steady_clock::now();
    if (first) {
      net.wait(peer, net.send(peer, out.data(), kBig), "link measurement", kBig);
      net.wait(peer, net.recv(peer, &byte, 1), "link measurement", 1);
    } else {
      net.wait(peer, net.recv(peer, in.data(), kBig), "link measurement", kBig);
      net.wait(peer, net.send(peer, &byte, 1), "link measurement", 1);
    }
    return seconds_since(t0);
  };
  // The leaders' measurement. A transient load (a process of the last job still exiting, a neighbour's burst)
  // can slow part of it, and a job then priced every row with a link that contradicts itself: one way alone
  // slower than both ways at once, or the first MiB slower than the rest (docs/hosts.md, "Local phases beyond
  // the cache"). Such a measurement is taken once more; the first host decides and tells the other, so both
  // run the same exchanges.
  auto leaders_measure = [&] {
    // The median round trip: right after start-up a few are slow (the PE's yielding waits hand the CPU to
    // threads still setting up), and a mean over them read far above the link's round trip
    // (docs/journal.md, "Across hosts").
    double rtt[kPings];
    for (int i = 0; i < kWarm + kPings; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      ping(lead);
      if (i >= kWarm) rtt[i - kWarm] = seconds_since(t0);
    }
    std::sort(rtt, rtt + kPings);
    l.alpha = rtt[kPings / 2] / 2;
    out.resize(kBig);
    in.resize(kBig);
    (void)both_ways(lead, kBig);  // warm-up: pages, the sockets' windows
    const double wake_bytes = LinkParams::kWakeBytes;
    double smalls[kBursts], bursts[kBursts];
    for (int i = 0; i < kBursts; ++i) {
      smalls[i] = both_ways(lead, static_cast<size_t>(wake_bytes));
      bursts[i] = both_ways(lead, static_cast<size_t>(burst));
    }
    std::sort(smalls, smalls + kBursts);
    std::sort(bursts, bursts + kBursts);
    const double t_small = smalls[kBursts / 2], t_burst = bursts[kBursts / 2];
    l.wake = 0;
    if (t_burst > t_small) {
      l.burst_bw = (burst - wake_bytes) / (t_burst - t_small);
      l.wake = std::max(0.0, t_small - l.alpha - wake_bytes / l.burst_bw);
    } else {  // noise: the 1 MiB transfer no slower than the 64 KiB one; no wake-up priced
      l.burst_bw = burst / std::max(t_burst - l.alpha, 1e-9);
    }
    double took[kStreams];
    for (double& t : took) t = both_ways(lead, kBig);
    std::sort(took, took + kStreams);
    l.stream_bw = beyond_burst(took[kStreams / 2], l.alpha);
    for (double& t : took) t = one_way(lead);
    std::sort(took, took + kStreams);
    l.oneway_bw = beyond_burst(took[kStreams / 2], 2 * l.alpha);
  };
  if (h.local_rank == 0) {
    leaders_measure();
    char again = first && (l.oneway_bw < l.stream_bw || l.burst_bw < l.stream_bw) ? 1 : 0;
    if (first) net.wait(lead, net.send(lead, &again, 1), "link measurement", 1);
    else net.wait(lead, net.recv(lead, &again, 1), "link measurement", 1);
    if (again) leaders_measure();
    // Still contradicting itself: priced as the physics allows (neither rate below the stream's).
    l.oneway_bw = std::max(l.oneway_bw, l.stream_bw);
    l.burst_bw = std::max(l.burst_bw, l.stream_bw);
  }
  l.host_bw = l.stream_bw;
  if (h.equal && h.local_size > 1) {
    // Every rail at once, started together on each host: the slowest rail's time for all the bytes.
    const int partner = h.members[static_cast<size_t>(peer_host)][static_cast<size_t>(h.local_rank)];
    out.resize(kBig);
    in.resize(kBig);
    (void)dispatch(*h.local, Kind::kBarrier, Args{});  // the leaders' measurement done: it runs alone
    (void)both_ways(partner, kBig);                        // warm-up
    (void)dispatch(*h.local, Kind::kBarrier, Args{});
    double mine = both_ways(partner, kBig), slowest = 0;
    (void)dispatch(*h.local, Kind::kAllreduce, Args{.send = &mine, .recv = &slowest, .count = 1,
                                                    .dtype = DType::kFloat64, .op = Op::kMax});
    l.host_bw = static_cast<double>(kBig) * h.local_size / std::max(slowest - l.alpha, 1e-9);
  }
  return l;
}

// Every member prices with rank 0's link (configured, measured before by this process, or measured now),
// local model and shape.
void agree_link(Communicator& c, Hier& h) {
  LinkParams l = configured_link();
  uint8_t measure = 0;
  if (c.rank == 0 && std::strcmp(l.source, "default") == 0) {
    std::lock_guard lk(g_link_mu);
    if (g_link_measured) l = g_link;
    else measure = 1;
  }
  (void)bcast_bytes(c, h, reinterpret_cast<char*>(&measure), 1, 0);
  if (measure) {
    transport::set_message_waits_yield(true);
    l = measure_link(c, h);
    transport::set_message_waits_yield(false);
    if (c.rank == 0) {
      std::lock_guard lk(g_link_mu);
      g_link = l;
      g_link_measured = true;
      log::info("link between hosts: {}", describe(l));
    }
  }
  // Everything selection sees is rank 0's: members on different hosts would otherwise price with their own
  // host's measured model (or oversubscription) and pick different rows for the same call.
  struct Agreed {
    NetShape net;
    ModelParams model;
    size_t slot_bytes;
    bool oversubscribed;
  } a{h.net, h.local->model, h.local->slot_bytes, h.local->oversubscribed};
  a.net.link = l;
  (void)bcast_bytes(c, h, reinterpret_cast<char*>(&a), sizeof a, 0);
  h.net = a.net;
  c.model = a.model;
  c.slot_bytes = a.slot_bytes;
  c.oversubscribed = a.oversubscribed;
  c.net = &h.net;
}

}  // namespace

Communicator* hier_local_peer(Communicator& c, int peer, int* local_peer) {
  Hier& h = *c.hier;
  if (h.host_of[static_cast<size_t>(peer)] != h.my_host) return nullptr;
  const auto& mine = h.members[static_cast<size_t>(h.my_host)];
  *local_peer = static_cast<int>(std::find(mine.begin(), mine.end(), peer) - mine.begin());
  return h.local;
}

void* hier_post(Communicator& c, bool send, void* buf, size_t bytes, int peer) {
  Hier& h = *c.hier;
  const int pe = c.world[static_cast<size_t>(peer)];
  const transport::Transport* t = h.msg[static_cast<size_t>(peer)];
  const uint64_t p2p_key = h.key | (uint64_t{1} << (62 - kPeBits));  // apart from the collectives' tags
  if (send) return t->send(pe, p2p_key << kPeBits | static_cast<uint64_t>(c.world[static_cast<size_t>(c.rank)]), buf, bytes);
  return t->recv(pe, p2p_key << kPeBits | static_cast<uint64_t>(pe), buf, bytes);
}

void hier_complete(Communicator& c, void* request, bool send, size_t bytes, int peer) {
  if (!request) return;
  const int pe = c.world[static_cast<size_t>(peer)];
  c.hier->msg[static_cast<size_t>(peer)]->wait(request, send ? "send" : "recv", pe, bytes);
}

Hier* hier_create(Communicator& c, Communicator* local) {
  auto* h = new Hier;
  h->local = local;
  local->parent = &c;  // a call on the host's part stops for a failure on another host too (CommWatch)
  const pgas::Runtime& r = pgas::rt();
  h->host_of.resize(static_cast<size_t>(c.size));
  std::vector<int> host_number(static_cast<size_t>(r.n_hosts), -1);  // job host -> this communicator's host
  for (int i = 0; i < c.size; ++i) {
    int& hn = host_number[static_cast<size_t>(r.host_of[static_cast<size_t>(c.world[static_cast<size_t>(i)])])];
    if (hn < 0) {
      hn = h->n_hosts++;
      h->members.emplace_back();
    }
    h->host_of[static_cast<size_t>(i)] = hn;
    h->msg.push_back(r.messages[static_cast<size_t>(c.world[static_cast<size_t>(i)])]);
    if (h->msg.back() && !h->msg.back()->abandon && resilient_job())
      log::fatal("resilient mode across hosts needs messages that a failed call can let go of: TESSERA_NET_MESSAGES=tcp "
                 "(the default), not {}", h->msg.back()->name);
    h->members[static_cast<size_t>(hn)].push_back(i);
  }
  h->my_host = h->host_of[static_cast<size_t>(c.rank)];
  const auto& mine = h->members[static_cast<size_t>(h->my_host)];
  h->local_size = static_cast<int>(mine.size());
  h->local_rank = static_cast<int>(std::find(mine.begin(), mine.end(), c.rank) - mine.begin());
  h->equal = true;
  for (const auto& m : h->members) {
    h->leaders.push_back(m[0]);
    h->equal = h->equal && m.size() == mine.size();
  }
  if (h->equal)
    for (const auto& m : h->members) h->rail.push_back(m[static_cast<size_t>(h->local_rank)]);
  // Tags: key << 24 | sender's PE, with the key's two top bits clear (the transport's own tags set the
  // tag's top bit; send/recv set the next one).
  h->key = c.uid & ((uint64_t{1} << (62 - kPeBits)) - 1);
  size_t largest = 0;
  for (const auto& m : h->members) largest = std::max(largest, m.size());
  h->net.hosts = h->n_hosts;
  h->net.ppn = static_cast<int>(largest);
  h->net.equal = h->equal;
  h->net.contention = std::max(1.0, static_cast<double>(r.machine_pes) / usable_cpus());
  h->net.compress = default_compress();
  h->net.gather_compress = default_allgather_compress();
  agree_link(c, *h);
  return h;
}

void hier_destroy(Hier* h) {
  if (!h) return;
  comm_destroy(h->local);
  delete h;
}

void hier_abandon(Hier* h) {
  if (!h) return;
  comm_abandon(h->local);
  delete h;
}

Compress default_compress() { return compress_of(kCompress); }
Compress default_allgather_compress() { return compress_of(kCompressAllgather); }

Status set_compression(const char* routine, Communicator& c, int mode, bool feedback) {
  TS_RETURN_IF_ERROR(agree_mode(routine, c, mode, feedback));
  if (c.hier) {
    c.hier->net.compress = static_cast<Compress>(mode);
    c.hier->net.feedback = feedback;
    c.hier->feedback.clear();
    c.last_algo = nullptr;  // the rows' costs have changed
  }
  return Status::ok();
}

Status set_allgather_compression(const char* routine, Communicator& c, int mode) {
  TS_RETURN_IF_ERROR(agree_mode(routine, c, mode, false));
  if (c.hier) {
    c.hier->net.gather_compress = static_cast<Compress>(mode);
    c.last_algo = nullptr;
  }
  return Status::ok();
}

std::string hier_describe(const Communicator& c) {
  const Hier& h = *c.hier;
  return fmt::format("{} hosts, {} members on this one{}; link {}", h.n_hosts, h.local_size,
                     h.equal ? "" : " (hosts of unequal size)", describe(h.net.link));
}

}  // namespace tessera::coll
