// tessera-info --health: asks a running job's launcher for its health view (tools/run/health.h) and prints
// it. The job is found as its PEs know it: TESSERA_JOB_SOCKET and TESSERA_JOB_SECRET from this process's
// environment (a shell inside the job), else from the environment of --job PID (a PE, or the launcher,
// whose PEs are its children), else from the one job of this user that is running (every process of the
// user is looked at; several jobs need --job). Reading another process's environment needs the rights of
// its owner, so only the job's user (or root) can ask, and the launcher checks the secret as for a PE.
#include "health_client.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bootstrap/protocol.h"

namespace tessera::info {
namespace {

struct JobRef {
  std::string socket, secret;
  pid_t pid = 0;  // a process whose environment named it
};

// TESSERA_JOB_SOCKET and TESSERA_JOB_SECRET of process `pid`, when it has both.
bool job_of(pid_t pid, JobRef* out) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!f) return false;
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  JobRef r;
  r.pid = pid;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    const std::string kv = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (kv.rfind("TESSERA_JOB_SOCKET=", 0) == 0) r.socket = kv.substr(19);
    if (kv.rfind("TESSERA_JOB_SECRET=", 0) == 0) r.secret = kv.substr(19);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (r.socket.empty() || r.secret.empty()) return false;
  *out = r;
  return true;
}

std::vector<pid_t> processes() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

// The children of `pid` (a launcher's PEs).
std::vector<pid_t> children(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t p : processes()) {
    std::ifstream f("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    if (!f || !std::getline(f, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == pid) out.push_back(p);
  }
  return out;
}

// Finds the job (see the top of this file); "" or why not.
std::string find_job(long job_pid, JobRef* out) {
  if (job_pid > 0) {
    if (job_of(static_cast<pid_t>(job_pid), out)) return "";
    for (pid_t c : children(static_cast<pid_t>(job_pid)))
      if (job_of(c, out)) return "";
    return "process " + std::to_string(job_pid) + " is neither a PE of a tessera-run job nor its launcher (or not " +
           "this user's)";
  }
  const char* s = std::getenv("TESSERA_JOB_SOCKET");
  const char* k = std::getenv("TESSERA_JOB_SECRET");
  if (s && *s && k && *k) {
    *out = JobRef{s, k, getpid()};
    return "";
  }
  std::map<std::string, JobRef> jobs;  // by socket
  const uid_t me = geteuid();
  for (pid_t p : processes()) {
    struct stat st{};
    if (stat(("/proc/" + std::to_string(p)).c_str(), &st) != 0 || st.st_uid != me) continue;
    JobRef r;
    if (job_of(p, &r)) jobs.emplace(r.socket, r);
  }
  if (jobs.empty()) return "no running tessera-run job of this user was found (start one, or give --job PID)";
  if (jobs.size() > 1) {
    std::string list;
    for (const auto& [sock, r] : jobs) list += (list.empty() ? "" : ", ") + std::to_string(r.pid);
    return std::to_string(jobs.size()) + " jobs are running (a PE of each: " + list + "): choose one with --job PID";
  }
  *out = jobs.begin()->second;
  return "";
}

}  // namespace

int health_main(long job_pid, double overdue_s, bool json) {
  JobRef job;
  if (const std::string why = find_job(job_pid, &job); !why.empty()) {
    std::fprintf(stderr, "tessera-info --health: %s\n", why.c_str());
    return 2;
  }
  if (job.secret.size() != bootstrap::kSecretChars) {
    std::fprintf(stderr, "tessera-info --health: the job's secret (pid %d) is %zu characters, not %zu\n", job.pid,
                 job.secret.size(), bootstrap::kSecretChars);
    return 2;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || job.socket.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "tessera-info --health: cannot reach the launcher at %s\n", job.socket.c_str());
    return 2;
  }
  std::strcpy(addr.sun_path, job.socket.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::fprintf(stderr, "tessera-info --health: connecting to the launcher at %s: %s (has the job ended?)\n",
                 job.socket.c_str(), std::strerror(errno));
    close(fd);
    return 2;
  }
  std::string payload = job.secret;
  const uint32_t word = static_cast<uint32_t>(overdue_s * 1000) | (json ? bootstrap::kHealthJson : 0);
  payload.append(reinterpret_cast<const char*>(&word), sizeof word);
  bootstrap::MsgType type{};
  std::vector<char> reply;
  Status st = bootstrap::send_msg(fd, bootstrap::MsgType::kHealth, payload.data(), payload.size());
  if (st.is_ok()) st = bootstrap::recv_msg(fd, &type, &reply, 5000, "the launcher");
  close(fd);
  if (!st.is_ok() || type != bootstrap::MsgType::kHealthReport) {
    std::fprintf(stderr, "tessera-info --health: %s\n",
                 st.is_ok() ? "the launcher answered with another message" : st.message().c_str());
    return 2;
  }
  const std::string text(reply.begin(), reply.end());
  std::fputs(text.c_str(), stdout);
  // Exit status for scripts: 0 healthy, 1 not.
  const bool healthy = json ? text.find("\"healthy\":true") != std::string::npos
                            : text.find("summary: healthy") != std::string::npos;
  return healthy ? 0 : 1;
}

}  // namespace tessera::info
