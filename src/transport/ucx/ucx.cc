// The UCX transport: peers on other hosts (transport.h), over whatever UCX finds between them (InfiniBand,
// RoCE, TCP).
//
// open() (collective, once at init): one UCP context and one worker per PE, in UCS_THREAD_MODE_MULTI (every
// thread of the PE may issue operations; the progress thread below progresses the same worker). The heap
// and data segments are registered with ucp_mem_map, their remote keys packed, and each PE's worker address,
// keys and segment bases are exchanged with the bootstrap's allgather (lengths first, then records padded to
// the longest). Endpoints and unpacked keys exist only for peers on other hosts; the rest of the job is
// reached through shared memory. When the job runs on one host, open() does nothing.
//
// UCX's own shared-memory transports are left out unless UCX_TLS is set: peers on this host use Tessera's
// shm transport, and a "host" that shares the kernel with another (containers, network namespaces) would
// otherwise be reached through shared memory it cannot see, or worse, silently, and the network never used.
//
// Puts, gets and atomics: rma.cc.
// Messages (collectives across hosts, when TESSERA_NET_MESSAGES=ucx: transport.cc chooses the TCP record
// first otherwise): ucp_tag_send_nbx / ucp_tag_recv_nbx with an exact tag; a message
// larger than UCX's eager limit goes by rendezvous, straight into the posted receive buffer.
//
// Progress: operations that target this PE (gets, atomics, and puts over TCP) advance only when its worker
// is progressed. A PE that computes without calling Tessera must not stall its peers, so each PE runs one
// progress thread that sleeps in epoll on the worker's event fd (ucp_worker_arm) and wakes only when
// something arrives: no CPU spent while nothing happens (the machines are often 2-CPU hosts); it also
// reads the large puts that arrive on TCP's streams (transport/tcp/tcp.h) from the same epoll. What it
// writes into this PE's memory wakes the waiters on those words; after a round it rings the PE's doorbell
// only while a thread of the PE waits for a UCX request (above). Blocking calls of the PE also progress
// the worker while they wait.
//
// The progress thread runs on the CPUs of the job near the NIC it serves (hwloc: the NIC's NUMA node).
//
// Failures: endpoints use UCP_ERR_HANDLING_MODE_PEER (a failed peer's operations fail instead of hanging);
// the job's end and its one line are the launcher's or the bootstrap's (on_peer_error).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "base/rank_table.h"
#include "base/trace.h"
#include "bootstrap/bootstrap.h"
#include "sync/wait.h"
#include "transport/tcp/tcp.h"
#include "transport/transport.h"
#include "transport/ucx/ucx.h"

namespace tessera::transport::ucx {
const config::Var<std::string> kProgressThread{
    "TESSERA_UCX_PROGRESS_THREAD", "on",
    "on: a thread per PE sleeps on the UCX worker's event fd and serves peers' gets, atomics and puts while the "
    "PE computes; off: only the PE's own Tessera calls progress the worker (peers wait until it calls one)"};

// Record exchanged at open(): fixed header, then worker address, heap key and data key bytes.
struct RecordHeader {
  uint64_t heap_base;
  uint64_t data_base;
  uint32_t addr_len;
  uint32_t heap_key_len;
  uint32_t data_key_len;
  uint32_t pad;
};

Status ucx_error(ucs_status_t st, std::string_view what) {
  return make_status(Code::kInternal, "UCX: {}: {}", what, ucs_status_string(st));
}

bool reach(const PeerInfo& me, const PeerInfo& peer) { return me.host != peer.host; }

// A peer's endpoint failed: the peer died or its host is gone. Saying so and ending the job is the
// launcher's or the bootstrap's (tessera-run, the TCP rendezvous, mpirun see the same death through their
// own connections and print the job's one line); ending it from here too would race them for that line. An
// operation on the endpoint now fails with a message naming the peer.
void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  if (g.closing.load()) return;
  const int pe = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  log::info("PE {} (host {}): UCX connection failed: {}", pe, g.peers[static_cast<size_t>(pe)].host,
            ucs_status_string(status));
}

std::string peer_name(int pe) {
  return pe >= 0 ? fmt::format("PE {} (host {})", pe, g.peers[static_cast<size_t>(pe)].host) : "every peer";
}

[[noreturn]] void operation_failed(const char* what, size_t bytes, int pe, ucs_status_t st) {
  peer_failed(fmt::format("UCX {} of {} bytes", what, bytes), pe, ucs_status_string(st));
}

[[noreturn]] void peer_failed(const std::string& what, int pe, const std::string& why) {
  transport::peer_failed(what, peer_name(pe), why);
}

// Waits for a request of `what` to `pe` under the job's deadline, progressing the worker; frees it.
void wait_request(void* req, const char* what, int pe, size_t bytes) {
  if (req == nullptr) return;
  if (UCS_PTR_IS_ERR(req)) operation_failed(what, bytes, pe, UCS_PTR_STATUS(req));
  ucs_status_t st = UCS_INPROGRESS;
  const RequestWait counted;
  sync::wait_until(
      [&] {
        ucp_worker_progress(g.worker);
        st = ucp_request_check_status(req);
        return st != UCS_INPROGRESS;
      },
      [&] {
        return fmt::format("UCX {} of {} bytes to {} to complete", what, bytes, peer_name(pe));
      });
  ucp_request_free(req);
  if (st != UCS_OK) operation_failed(what, bytes, pe, st);
}

void progress_loop(std::string nic) {
  if (trace::g_on) trace::name_thread("progress");
  // On the NUMA node of the NIC it serves (its interrupts and DMA land there); anywhere in the job else.
  cpu_set_t near;
  if (cpus_near_nic(nic.c_str(), &near)) sched_setaffinity(0, sizeof near, &near);
  else unbind_thread_to_job_cpus();
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  // Events carry what woke: the worker, the stop, or the PE whose put connection has data.
  constexpr uint64_t kWorker = ~uint64_t{0}, kStop = kWorker - 1;
  ev.events = EPOLLIN;
  ev.data.u64 = kWorker;
  epoll_ctl(ep, EPOLL_CTL_ADD, g.efd, &ev);
  ev.data.u64 = kStop;
  epoll_ctl(ep, EPOLL_CTL_ADD, g.stop_fd, &ev);
  std::vector<int> put_fd(static_cast<size_t>(g.n_pes), -1);
  for (const auto& [fd, pe] : tcp::stream_fds()) {  // large puts on TCP's streams
    put_fd[static_cast<size_t>(pe)] = fd;
    ev.data.u64 = static_cast<uint64_t>(pe);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  for (;;) {
    bool any = false;
    while (ucp_worker_progress(g.worker) != 0) any = true;
    if (any && g.request_waiters.load(std::memory_order_seq_cst) != 0) sync::notify(g.my_pe);
    const ucs_status_t st = ucp_worker_arm(g.worker);
    if (st == UCS_ERR_BUSY) continue;  // more arrived meanwhile
    if (st != UCS_OK) log::fatal("UCX: arming the progress thread's worker: {}", ucs_status_string(st));
    epoll_event got[8];
    const int n = epoll_wait(ep, got, 8, -1);
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const uint64_t what = got[i].data.u64;
      stop = stop || what == kStop;
      if (what < kStop && !tcp::stream_readable(static_cast<int>(what), g.closing.load())) {
        epoll_event none{};
        epoll_ctl(ep, EPOLL_CTL_DEL, put_fd[what], &none);
      }
    }
    if (stop) break;
  }
  ::close(ep);
}

Status open(const JobView& job) {
  if (!job.spans_hosts()) return Status::ok();
  g.my_pe = job.my_pe;
  g.n_pes = job.n_pes;
  g.allgather = job.allgather;
  g.heap_bytes = job.heap_bytes;
  g.my_heap = job.my_heap;
  g.my_data = job.my_data;
  g.data_bytes = job.data_bytes;
  g.peers.assign(static_cast<size_t>(job.n_pes), Peer{});

  // UCX's keepalive declares a peer whose worker has not answered for a while failed: on a loaded 2-CPU host
  // a healthy peer's progress thread can wait that long for a CPU, and a failure ends the job. Whether a PE
  // or host is gone is the bootstrap's and the launcher's to say (their connections), so it is off unless
  // the user sets it.
  // (UCX's transports read it from the environment too, so it is set there, before ucp_init.)
  setenv("UCX_KEEPALIVE_INTERVAL", "inf", 0);
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error(st, "reading the configuration");
  if (!std::getenv("UCX_TLS")) (void)ucp_config_modify(config, "TLS", "^sm");
  // The rank table's NICs of this host, unless the user chose UCX's devices.
  if (const RankTable* t = rank_table(); t && !std::getenv("UCX_NET_DEVICES"))
    if (const RankTable::Host* h = t->host_of(job.my_pe); h && !h->nics.empty()) {
      std::string devs;
      for (const std::string& nic : h->nics) devs += (devs.empty() ? "" : ",") + nic;
      (void)ucp_config_modify(config, "NET_DEVICES", devs.c_str());
    }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_TAG | UCP_FEATURE_AM |
                    UCP_FEATURE_WAKEUP;
  params.estimated_num_eps = static_cast<size_t>(job.n_pes);
  st = ucp_init(&params, config, &g.context);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_error(st, "ucp_init");

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(g.context, &wp, &g.worker);
  if (st != UCS_OK) return ucx_error(st, "creating the worker");
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  if (ucp_worker_query(g.worker, &wa) == UCS_OK && wa.thread_mode != UCS_THREAD_MODE_MULTI)
    return make_status(Code::kUnsupported, "UCX: this UCX build has no multi-threaded workers (--enable-mt)");

  auto map = [](char* base, size_t bytes, ucp_mem_h* memh) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = base;
    mp.length = bytes;
    return ucp_mem_map(g.context, &mp, memh);
  };
  st = map(job.my_heap, job.heap_bytes, &g.heap_memh);
  if (st != UCS_OK) return ucx_error(st, fmt::format("registering the symmetric heap ({} bytes)", job.heap_bytes));
  if (job.data_bytes) {
    st = map(job.my_data, job.data_bytes, &g.data_memh);
    if (st != UCS_OK) return ucx_error(st, "registering the data segment");
  }

  // My record.
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(g.worker, &addr, &addr_len);
  if (st != UCS_OK) return ucx_error(st, "getting the worker address");
  void* heap_key = nullptr;
  void* data_key = nullptr;
  size_t heap_key_len = 0, data_key_len = 0;
  st = ucp_rkey_pack(g.context, g.heap_memh, &heap_key, &heap_key_len);
  if (st != UCS_OK) return ucx_error(st, "packing the heap's key");
  if (g.data_memh) {
    st = ucp_rkey_pack(g.context, g.data_memh, &data_key, &data_key_len);
    if (st != UCS_OK) return ucx_error(st, "packing the data segment's key");
  }
  RecordHeader h{reinterpret_cast<uint64_t>(job.my_heap), reinterpret_cast<uint64_t>(job.my_data),
                 static_cast<uint32_t>(addr_len), static_cast<uint32_t>(heap_key_len),
                 static_cast<uint32_t>(data_key_len), 0};
  std::vector<char> mine(sizeof h + addr_len + heap_key_len + data_key_len);
  std::memcpy(mine.data(), &h, sizeof h);
  std::memcpy(mine.data() + sizeof h, addr, addr_len);  // copy-ok: worker address
  std::memcpy(mine.data() + sizeof h + addr_len, heap_key, heap_key_len);  // copy-ok: remote key
  if (data_key_len)
    std::memcpy(mine.data() + sizeof h + addr_len + heap_key_len, data_key, data_key_len);  // copy-ok: remote key
  ucp_worker_release_address(g.worker, addr);
  ucp_rkey_buffer_release(heap_key);
  if (data_key) ucp_rkey_buffer_release(data_key);

  // Lengths, then records padded to the longest.
  const auto n = static_cast<size_t>(job.n_pes);
  uint64_t my_len = mine.size();
  std::vector<uint64_t> lens(n);
  TS_RETURN_IF_ERROR(job.allgather(&my_len, lens.data(), sizeof my_len));
  uint64_t longest = 0;
  for (uint64_t l : lens) longest = std::max(longest, l);
  mine.resize(longest);
  std::vector<char> all(longest * n);
  TS_RETURN_IF_ERROR(job.allgather(mine.data(), all.data(), longest));

  for (int pe = 0; pe < job.n_pes; ++pe) {
    Peer& p = g.peers[static_cast<size_t>(pe)];
    p.host = job.hosts[pe];
    if (job.hosts[pe] == job.hosts[job.my_pe]) continue;
    const char* rec = all.data() + longest * static_cast<size_t>(pe);
    RecordHeader ph;
    std::memcpy(&ph, rec, sizeof ph);
    p.heap_base = ph.heap_base;
    p.data_base = ph.data_base;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(rec + sizeof ph);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_peer_error;
    ep.err_handler.arg = reinterpret_cast<void*>(static_cast<intptr_t>(pe));
    st = ucp_ep_create(g.worker, &ep, &p.ep);
    if (st != UCS_OK) return ucx_error(st, fmt::format("connecting to PE {} on host {}", pe, p.host));
    st = ucp_ep_rkey_unpack(p.ep, rec + sizeof ph + ph.addr_len, &p.heap_rkey);
    if (st != UCS_OK) return ucx_error(st, fmt::format("unpacking PE {}'s heap key", pe));
    if (ph.data_key_len) {
      st = ucp_ep_rkey_unpack(p.ep, rec + sizeof ph + ph.addr_len + ph.heap_key_len, &p.data_rkey);
      if (st != UCS_OK) return ucx_error(st, fmt::format("unpacking PE {}'s data segment key", pe));
    }
  }

  TS_RETURN_IF_ERROR(open_messages(job.n_pes));
  st = ucp_worker_get_efd(g.worker, &g.efd);
  if (st != UCS_OK) return ucx_error(st, "getting the worker's event fd");
  g.stop_fd = eventfd(0, EFD_CLOEXEC);
  if (g.stop_fd < 0) return sys_error("UCX progress thread: eventfd");
  g.closing.store(false);
  // The NIC: the rank table's first for this host, else UCX_NET_DEVICES's first ("mlx5_0:1" -> "mlx5_0"),
  // else the first network device hwloc finds.
  std::string nic;
  if (const RankTable* t = rank_table())
    if (const RankTable::Host* h = t->host_of(job.my_pe); h && !h->nics.empty()) nic = h->nics[0];
  if (const char* d = std::getenv("UCX_NET_DEVICES"); nic.empty() && d && std::strcmp(d, "all") != 0)
    nic = std::string(d).substr(0, std::string(d).find_first_of(",:"));
  if (config::one_of(kProgressThread, {"on", "off"}) == 0) {
    tcp::set_streams_read(true);  // the thread reads them
    if (tcp::streams_on()) start_replier();
    g.progress = std::thread(progress_loop, nic);
  }
  return Status::ok();
}

void close() {
  if (!g.worker) return;
  // A peer may still wait for the reply to an atomic this PE has applied (the reply can sit in a send queue
  // after the barrier that made everyone finalize): every PE completes its own operations, then meets the
  // others out of band, with the progress thread still serving, before anyone closes an endpoint.
  // From here a peer that closes its endpoints first is no failure (a PE that dies now is the launcher's
  // or the bootstrap's to report).
  quiet();
  g.closing.store(true);
  std::vector<char> none(static_cast<size_t>(g.n_pes));
  const char mine = 0;
  // Resilient mode: a failed PE never meets the others; shmem_finalize's barrier over the survivors, which
  // each enters after its own quiet, has met them already (pgas/runtime.cc, leave_resilient).
  if (!peer_loss_tolerated())
    if (Status st = g.allgather(&mine, none.data(), 1); !st.is_ok())
      log::warn("UCX: the out-of-band barrier before closing failed: {}", st.message());
  if (g.progress.joinable()) {
    const uint64_t one = 1;
    (void)!::write(g.stop_fd, &one, sizeof one);
    g.progress.join();
  }
  if (g.stop_fd >= 0) ::close(g.stop_fd);
  g.stop_fd = -1;
  stop_replier();
  tcp::set_streams_read(false);
  for (Peer& p : g.peers) {
    if (p.heap_rkey) ucp_rkey_destroy(p.heap_rkey);
    if (p.data_rkey) ucp_rkey_destroy(p.data_rkey);
    if (p.ep) {
      // Every operation completed before the finalize barrier: nothing to flush, and a peer that has
      // already destroyed its worker would never answer a flush.
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* req = ucp_ep_close_nbx(p.ep, &prm);
      if (req && !UCS_PTR_IS_ERR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(g.worker);
        ucp_request_free(req);
      }
    }
  }
  g.peers.clear();
  if (g.heap_memh) ucp_mem_unmap(g.context, g.heap_memh);
  if (g.data_memh) ucp_mem_unmap(g.context, g.data_memh);
  g.heap_memh = g.data_memh = nullptr;
  ucp_worker_destroy(g.worker);
  ucp_cleanup(g.context);
  g.worker = nullptr;
  g.context = nullptr;
  g.efd = -1;
}

Status map(PeerMemory* m) {
  if (!g.worker || !g.peers[static_cast<size_t>(m->pe)].ep)
    return make_status(Code::kInternal, "UCX: PE {} has no endpoint (open() found one host)", m->pe);
  m->heap = m->data = nullptr;  // reached through the functions below
  return Status::ok();
}
void unmap(PeerMemory* m) { m->heap = m->data = nullptr; }

void progress() {
  if (!g.worker) return;
  flush_batches();  // a wait never waits for a put this PE holds (rma.cc: sessions)
  ucp_worker_progress(g.worker);
}

void* send(int pe, uint64_t tag, const void* buf, size_t bytes) {
  ucp_request_param_t prm{};
  void* req = ucp_tag_send_nbx(g.peers[static_cast<size_t>(pe)].ep, buf, bytes, tag, &prm);
  if (UCS_PTR_IS_ERR(req))
    log::fatal("UCX send of {} bytes to PE {} (host {}) failed: {}", bytes, pe, g.peers[static_cast<size_t>(pe)].host,
               ucs_status_string(UCS_PTR_STATUS(req)));
  return req;
}

void* recv(int pe, uint64_t tag, void* buf, size_t bytes) {
  ucp_request_param_t prm{};
  void* req = ucp_tag_recv_nbx(g.worker, buf, bytes, tag, ~ucp_tag_t{0}, &prm);
  if (UCS_PTR_IS_ERR(req))
    log::fatal("UCX receive of {} bytes from PE {} failed: {}", bytes, pe, ucs_status_string(UCS_PTR_STATUS(req)));
  return req;
}

void wait(void* req, const char* what, int pe, size_t bytes) { wait_request(req, what, pe, bytes); }

State g;

}  // namespace tessera::transport::ucx

namespace tessera::transport {

extern const Transport kUcx;
const Transport kUcx{
    .name = "ucx",
    .description = "other hosts: UCX (puts, gets and atomics as active messages; a progress thread on the worker's event fd)",
    .caps = kRma | kAtomics | kMessages,
    .eager_limit = ucx::kAmMin,
    .can_reach = ucx::reach,
    .open = ucx::open,
    .close = ucx::close,
    .map = ucx::map,
    .unmap = ucx::unmap,
    .put = ucx::put,
    .put_nbi = ucx::put_nbi,
    .get = ucx::get,
    .atomic = ucx::atomic,
    .put_signal = ucx::put_signal,
    .fence = ucx::fence,
    .quiet = ucx::quiet,
    .progress = ucx::progress,
    .batch = ucx::batch,
    .send = ucx::send,
    .recv = ucx::recv,
    .wait = ucx::wait,
};

}  // namespace tessera::transport
