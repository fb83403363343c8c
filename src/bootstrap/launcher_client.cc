// Bootstrap through tessera-run: connect to the launcher's socket, present the job secret, then
// allgather/barrier through it. Used only during init and finalize, never on a data path.
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "base/cpu.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/protocol.h"
#include "sync/wait.h"

namespace tessera::bootstrap {
namespace {
int g_fd = -1;
int g_size = 1;

const char* env(const char* name) { return std::getenv(name); }

int timeout_ms() {
  uint64_t ns = sync::timeout_ns();
  return static_cast<int>(std::min<uint64_t>(ns / 1000000, 0x7fffffff));
}

bool detect() { return env("TESSERA_JOB_SOCKET") != nullptr; }

Status parse_env_int(const char* name, int lo, int hi, int* out) {
  const char* v = env(name);
  if (!v) return invalid_arg("bootstrap: {} is not set (started by an old tessera-run?)", name);
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) return invalid_arg("bootstrap: {}={:?}: expected {}..{}", name, v, lo, hi);
  *out = static_cast<int>(x);
  return Status::ok();
}

// tessera-run starts each PE bound to a CPU of its own when the PEs fit, and PE r on CPU r mod the count when
// they are a whole multiple of the CPUs (tools/run/placement.h). The PE stays bound by default, as Open MPI
// binds to cores: left free, a PE woken from a futex by a peer is often moved onto that peer's CPU (the
// scheduler's wake-affine choice), and two PEs spinning on one CPU then take turns: every small collective
// waits for its peer to be scheduled instead of for one cache-line transfer, until the load balancer
// separates them, which takes tens of milliseconds and happens again after every sleep (docs/journal.md,
// "CPU binding at start-up"). Under auto, the launcher itself unbinds the PEs while processes outside
// the job use its CPUs. Threads the PE starts for itself run on every CPU of the job
// (unbind_thread_to_job_cpus); user threads inherit the binding unless TESSERA_BIND=none.
const config::Var<std::string> kBind{
    "TESSERA_BIND", "auto",
    "auto: keep each PE on the CPU tessera-run started it on while nothing outside the job uses the job's "
    "CPUs (the launcher unbinds the PEs while something does); core: keep it there whatever else runs; none: "
    "let it run on every CPU of the job"};

// Read by tessera-run itself (tools/run/hosts_job.cc), not by the PEs; declared here, with the launcher's
// other variables, so that tessera-info lists it and a PE that inherits it does not refuse it as unknown.
const config::Var<std::string> kRsh{
    "TESSERA_RSH", "ssh",
    "tessera-run --hosts/--hostfile: the remote shell that starts each host's agent, run as `$TESSERA_RSH HOST "
    "/path/to/tessera-run --agent` (words split at spaces, e.g. \"ssh -o BatchMode=yes\"; a relative path is "
    "taken from the launcher's working directory)"};

// Read by tessera-run (tools/run/job.cc): the launcher passes the mode to the PEs in the job's control
// segment (pgas::JobControl::resilient). Declared here so that tessera-info lists it and the PEs accept it.
const config::Var<bool> kResilient{
    "TESSERA_RESILIENT", false,
    "tessera-run: 1 is --on-failure continue (a PE's failure leaves the others running; their calls on "
    "communicators it belonged to fail naming it, and they may shrink them: docs/resilience.md); 0 ends the "
    "job (default). --on-failure wins over it"};

void apply_binding() {
  if (config::one_of(kBind, {"auto", "core", "none"}) == 2) unbind_thread_to_job_cpus();
}

Status init(JobInfo* out) {
  apply_binding();
  JobInfo info;
  TS_RETURN_IF_ERROR(parse_env_int("TESSERA_JOB_SIZE", 1, 1 << 20, &info.size));
  TS_RETURN_IF_ERROR(parse_env_int("TESSERA_JOB_RANK", 0, info.size - 1, &info.rank));
  const char* id = env("TESSERA_JOB_ID");
  const char* secret = env("TESSERA_JOB_SECRET");
  const char* ctl = env("TESSERA_JOB_CONTROL");
  const char* path = env("TESSERA_JOB_SOCKET");
  if (!id || !secret || !ctl) return invalid_arg("bootstrap: TESSERA_JOB_ID/SECRET/CONTROL not all set");
  info.job_id = id;
  info.control_name = ctl;

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(path) >= sizeof(addr.sun_path))
    return invalid_arg("bootstrap: socket path {:?} longer than {} bytes", path, sizeof(addr.sun_path) - 1);
  std::strcpy(addr.sun_path, path);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("bootstrap: socket");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status st = sys_error(fmt::format("bootstrap: connect to launcher at {}", path));
    ::close(fd);
    return st;
  }
  std::string hello(secret);
  hello.resize(kSecretChars, '\0');
  uint32_t rank = static_cast<uint32_t>(info.rank);
  hello.append(reinterpret_cast<const char*>(&rank), sizeof rank);
  TS_RETURN_IF_ERROR(send_msg(fd, MsgType::kHello, hello.data(), hello.size()));
  MsgType t;
  std::vector<char> payload;
  Status st = recv_msg(fd, &t, &payload, timeout_ms(), "the launcher");
  if (!st.is_ok() || t != MsgType::kWelcome) {
    ::close(fd);
    return st.is_ok() ? make_status(Code::kInternal, "bootstrap: unexpected reply {} to hello", uint32_t(t)) : st;
  }
  g_fd = fd;
  g_size = info.size;
  *out = info;
  return Status::ok();
}

Status allgather(const void* mine, void* all, size_t bytes) {
  TS_RETURN_IF_ERROR(send_msg(g_fd, MsgType::kAllgather, mine, bytes));
  MsgType t;
  std::vector<char> payload;
  TS_RETURN_IF_ERROR(recv_msg(g_fd, &t, &payload, timeout_ms(), "the launcher (allgather)"));
  if (t != MsgType::kGathered || payload.size() != bytes * static_cast<size_t>(g_size))
    return make_status(Code::kInternal, "bootstrap: allgather reply of {} bytes, expected {}", payload.size(),
                       bytes * static_cast<size_t>(g_size));
  if (!payload.empty()) std::memcpy(all, payload.data(), payload.size());  // copy-ok: start-up exchange
  return Status::ok();
}

Status barrier() {
  char none = 0;
  std::vector<char> all(static_cast<size_t>(g_size));
  return allgather(&none, all.data(), 1);
}

void finalize() {
  if (g_fd >= 0) ::close(g_fd);
  g_fd = -1;
}
}  // namespace

const Backend kLauncherBackend{"launcher", detect, init, allgather, barrier, finalize};

}  // namespace tessera::bootstrap
