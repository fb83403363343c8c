// The TCP rendezvous as a bootstrap backend (tcp.h): its environment, the unique-id form, and the record
// that bootstrap.cc lists after tessera-run and PMIx.
//
//   TESSERA_BOOTSTRAP=tcp://HOST:PORT  TESSERA_RANK=r  TESSERA_SIZE=n  TESSERA_JOB_SECRET=<hex>
//   TESSERA_BOOTSTRAP=tcp://HOST:PORT/SECRET (from tessera_bootstrap_uid in the process that is rank 0)
//
// TESSERA_JOB_ID, when set (tessera-run --hosts sets it on every PE), is the job id rank 0 hands out instead
// of a random one: a launcher that chose it knows the names of the job's shared-memory objects
// (/dev/shm/tessera-<id>-*) and can remove whatever a PE that died during start-up left on its host.
// Like every TESSERA_JOB_ variable it is not declared in the registry (config.cc lets the prefix pass).
// The job's control segment is not made here: control_name stays empty and the runtime makes it.
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include "base/config.h"
#include "base/cpu.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp.h"
#include "bootstrap/tcp_socket.h"
#include "sync/wait.h"

namespace tessera::bootstrap {
namespace {
using tcp::Address;

std::string show_masked(const std::string& v) { return tcp::masked(v); }
std::string show_hidden(const std::string& v) { return v.empty() ? "" : "<secret>"; }

const config::Var<std::string> kBootstrap{
    "TESSERA_BOOTSTRAP", "",
    "How the PEs of a job started by your own launcher (not tessera-run, not a PMIx launcher) find each other: "
    "tcp://HOST:PORT, where rank 0 listens and the other ranks connect (with TESSERA_RANK, TESSERA_SIZE and "
    "TESSERA_JOB_SECRET), or the tcp://HOST:PORT/SECRET string tessera_bootstrap_uid made in rank 0. Empty: "
    "tessera-run, PMIx, or a job of one PE",
    {}, show_masked};
const config::Var<int64_t> kRank{"TESSERA_RANK", -1,
                                 "This PE's rank, 0..TESSERA_SIZE-1, for TESSERA_BOOTSTRAP (-1: not set)"};
const config::Var<int64_t> kSize{"TESSERA_SIZE", 0, "The number of PEs in the job, for TESSERA_BOOTSTRAP (0: not set)"};
const config::Var<std::string> kSecret{
    "TESSERA_JOB_SECRET", "",
    "The job's secret: the same 32 to 256 hex digits on every rank (e.g. `openssl rand -hex 32`) for "
    "TESSERA_BOOTSTRAP=tcp://HOST:PORT; tessera-run sets its own. Never printed",
    {}, show_hidden};

constexpr int64_t kMaxPes = 1 << 20;

// Not a static object: at exit without finalize, no destructor joins the thread; the kernel closes the
// connections, which is how the other PEs learn that this one is gone.
tcp::Endpoint* g_endpoint = nullptr;

// Rank 0's listening socket after a clean finalize, for an init after the last finalize in this process
// (OpenSHMEM 1.6): the other PEs' second joins wait in its backlog until rank 0 initializes again. Owned
// by the process that listened: a forked child closes its copy (forget_in_child), so that a child outliving
// rank 0 cannot hold the port open and keep the others' second joins waiting instead of failing at once.
struct KeptListen {
  int fd = -1;
  std::string host;
  uint16_t port = 0;
  pid_t pid = -1;
};
KeptListen g_kept_listen;  // touched by init and finalize only, which the runtime serializes
bool g_joined = false;     // this process has joined a job through this backend before
Address g_address;         // rank 0's, of the current job

// A child forked by the program (a data-loader worker, a helper) inherits the connection: without this it
// would keep it open after its parent died, and rank 0 would never see the close.
void forget_in_child() {
  if (g_endpoint) g_endpoint->close_in_child();
  g_endpoint = nullptr;  // the child's copy is left alone: its thread does not exist here
  if (g_kept_listen.fd >= 0) ::close(g_kept_listen.fd);
  g_kept_listen.fd = -1;
}
std::once_flag g_atfork_once;

// tessera_bootstrap_uid's listening socket, owned by the process that made it (a forked child inherits
// the descriptor but is not that process).
struct UniqueId {
  int fd = -1;
  uint16_t port = 0;
  std::string secret;
  pid_t pid = -1;
};
std::mutex g_uid_mu;
UniqueId g_uid;

bool made_here(const Address& a) {
  std::lock_guard lk(g_uid_mu);
  return g_uid.pid == ::getpid() && secret_equal(g_uid.secret, a.secret);
}

bool detect() { return !kBootstrap.get().empty(); }

Status read_rank_size(int* rank, int* size) {
  const std::string form = tcp::masked(kBootstrap.get());
  if (!kSize.is_set())
    return invalid_arg("bootstrap (tcp): TESSERA_BOOTSTRAP={} needs the job's size in TESSERA_SIZE (not set) and this "
                       "process's rank in TESSERA_RANK", form);
  if (kSize.get() < 1 || kSize.get() > kMaxPes)
    return invalid_arg("bootstrap (tcp): TESSERA_SIZE={}: expected 1..{}", kSize.get(), kMaxPes);
  if (!kRank.is_set())
    return invalid_arg("bootstrap (tcp): TESSERA_BOOTSTRAP={} needs this process's rank in TESSERA_RANK (not set), "
                       "0..{}", form, kSize.get() - 1);
  if (kRank.get() < 0 || kRank.get() >= kSize.get())
    return invalid_arg("bootstrap (tcp): TESSERA_RANK={}: expected 0..{} (TESSERA_SIZE={})", kRank.get(),
                       kSize.get() - 1, kSize.get());
  *rank = static_cast<int>(kRank.get());
  *size = static_cast<int>(kSize.get());
  return Status::ok();
}

// This PE's end of the star: rank 0 listens (on the unique id's socket when the string is one), the others
// connect.
Result<std::unique_ptr<tcp::Endpoint>> start(const tcp::Config& cfg) {
  const Address& a = cfg.address;
  if (cfg.rank != 0) {
    if (!a.secret.empty() && made_here(a))
      return invalid_arg("bootstrap (tcp): this process made TESSERA_BOOTSTRAP's id with tessera_bootstrap_uid, so it "
                         "listens for the job and must be rank 0, not TESSERA_RANK={}", cfg.rank);
    return tcp::start_peer(cfg);
  }
  int fd = -1;
  if (g_kept_listen.fd >= 0 && g_kept_listen.pid == ::getpid() && g_kept_listen.host == a.host &&
      g_kept_listen.port == a.port) {
    fd = std::exchange(g_kept_listen.fd, -1);
  } else if (!a.secret.empty()) {
    fd = tcp::take_unique_id_socket(a, nullptr);
    if (fd < 0)
      return invalid_arg("bootstrap (tcp): TESSERA_BOOTSTRAP holds an id that tessera_bootstrap_uid made in another "
                         "process; the process that made it must be rank 0, and this one has TESSERA_RANK=0");
  } else {
    TS_ASSIGN_OR_RETURN(fd, tcp::listen_on(a));
  }
  return tcp::start_rank0(cfg, fd);
}

Status init(JobInfo* out) {
  TS_ASSIGN_OR_RETURN(Address a, tcp::parse_address("TESSERA_BOOTSTRAP", kBootstrap.get()));
  tcp::Config cfg;
  TS_RETURN_IF_ERROR(read_rank_size(&cfg.rank, &cfg.size));
  if (a.secret.empty()) {
    if (!kSecret.is_set())
      return invalid_arg("bootstrap (tcp): TESSERA_JOB_SECRET is not set: TESSERA_BOOTSTRAP={} needs the job's secret, "
                         "the same {} to {} hex digits on every rank", tcp::masked(kBootstrap.get()),
                         tcp::kMinSecretChars, tcp::kMaxSecretChars);
    TS_RETURN_IF_ERROR(tcp::check_secret("TESSERA_JOB_SECRET", kSecret.get()));
    cfg.secret = kSecret.get();
  } else {
    cfg.secret = a.secret;  // the id carries it; TESSERA_JOB_SECRET is not consulted
  }
  cfg.address = a;
  if (const char* id = std::getenv("TESSERA_JOB_ID"); id && cfg.rank == 0) {
    if (!tcp::valid_job_id(id))
      return invalid_arg("bootstrap (tcp): TESSERA_JOB_ID={:?}: expected {} lowercase hex digits (it names the job's "
                         "shared-memory objects)", id, tcp::kJobIdChars);
    cfg.job_id = id;
  }
  cfg.rejoin = g_joined;
  // Only with a control segment from the agent, where the failures are marked: without one nobody would tell
  // the others that a PE is gone.
  if (const char* r = std::getenv("TESSERA_RESILIENT"); r && *r && std::getenv("TESSERA_JOB_CONTROL")) {
    TS_ASSIGN_OR_RETURN(cfg.resilient, config::parse_bool("TESSERA_RESILIENT", r));
  }
  cfg.timeout_ns = sync::timeout_ns();
  cfg.start_deadline_ns = now_ns() + cfg.timeout_ns;

  if (g_kept_listen.fd >= 0 && (g_kept_listen.pid != ::getpid() || cfg.rank != 0 || g_kept_listen.host != a.host ||
                                g_kept_listen.port != a.port)) {
    if (g_kept_listen.pid == ::getpid()) ::close(g_kept_listen.fd);  // another address now: not needed
    g_kept_listen = {};
  }
  TS_ASSIGN_OR_RETURN(std::unique_ptr<tcp::Endpoint> ep, start(cfg));
  g_joined = true;
  g_address = a;
  std::call_once(g_atfork_once, [] { ::pthread_atfork(nullptr, nullptr, forget_in_child); });
  g_endpoint = ep.release();
  JobInfo info;
  info.rank = cfg.rank;
  info.size = cfg.size;
  info.job_id = g_endpoint->job_id();
  // The agent of tessera-run --hosts makes the host's control segment in resilient mode (it marks failures
  // there); otherwise the runtime makes one per host (pgas init).
  const char* ctl = std::getenv("TESSERA_JOB_CONTROL");
  info.control_name = ctl ? ctl : "";
  *out = info;
  return Status::ok();
}

Status allgather(const void* mine, void* all, size_t bytes) {
  if (!g_endpoint) return make_status(Code::kInternal, "bootstrap (tcp): allgather before init");
  return g_endpoint->allgather(mine, all, bytes);
}

Status barrier() { return allgather(nullptr, nullptr, 0); }

void finalize() {
  if (!g_endpoint) return;
  g_endpoint->finalize();
  if (const int fd = g_endpoint->take_listen_socket(); fd >= 0)
    g_kept_listen = {fd, g_address.host, g_address.port, ::getpid()};
  delete g_endpoint;
  g_endpoint = nullptr;
}

void abort(int code) {
  if (g_endpoint) g_endpoint->abort(code);
}
}  // namespace

namespace tcp {
Result<std::string> make_unique_id(const std::string& host_arg) {
  std::string host = host_arg;
  if (host.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return sys_error("tessera_bootstrap_uid: gethostname");
    host = name;
  }
  // The string must read back as TESSERA_BOOTSTRAP (tcp_wire.h's parse_address).
  if (host.size() > kMaxHostChars || host.find_first_of(":/[]") != std::string::npos)
    return invalid_arg("tessera_bootstrap_uid: host {:?}: expected an IPv4 address or a host name of at most {} "
                       "characters", host, kMaxHostChars);
  Address a;
  a.host = host;  // port 0: the kernel chooses
  TS_ASSIGN_OR_RETURN(int fd, listen_on(a));
  Result<uint16_t> port = local_port(fd);
  if (!port.is_ok()) {
    ::close(fd);
    return port.status();
  }
  UniqueId id{fd, port.value(), random_hex(kSecretChars), ::getpid()};
  std::string text = fmt::format("tcp://{}:{}/{}", host, id.port, id.secret);
  std::lock_guard lk(g_uid_mu);
  if (g_uid.fd >= 0 && g_uid.pid == id.pid) ::close(g_uid.fd);
  g_uid = std::move(id);
  return text;
}

int take_unique_id_socket(const Address& a, bool* made) {
  std::lock_guard lk(g_uid_mu);
  const bool mine = g_uid.pid == ::getpid() && secret_equal(g_uid.secret, a.secret);
  if (made) *made = mine;
  if (!mine || g_uid.port != a.port || g_uid.fd < 0) return -1;
  const int fd = g_uid.fd;
  g_uid.fd = -1;
  return fd;
}
}  // namespace tcp

const Backend kTcpBackend{.name = "tcp",
                          .detect = detect,
                          .init = init,
                          .allgather = allgather,
                          .barrier = barrier,
                          .finalize = finalize,
                          .abort = abort};

}  // namespace tessera::bootstrap
