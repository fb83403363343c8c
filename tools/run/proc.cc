#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "base/status.h"
#include "pgas/runtime.h"
#include "transport/shm/segment.h"

namespace tessera::run {

void no_ucx_error_handlers() { ::setenv("UCX_HANDLE_ERRORS", "none", 0); }

void one_blas_thread_per_pe(int pes_on_host) {
  if (pes_on_host < 2) return;
  for (const char* name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (std::getenv(name)) return;
  ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
}

std::string exec_program(char* const argv[]) {
  ::execvp(argv[0], argv);
  const int on_path = errno;
  if (std::strchr(argv[0], '/') != nullptr || on_path != ENOENT) return std::strerror(on_path);
  // A path now: execvp runs it as it would have from PATH (a file without #! as a shell script).
  const std::string here = std::string("./") + argv[0];
  ::execvp(here.c_str(), argv);
  if (errno != ENOENT) return fmt::format("{}: {}", here, std::strerror(errno));
  return "not found on PATH, nor in the working directory";
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : std::to_string(sig);
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), signal_name(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {:#x}", status);
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

void remove_job_segments(const std::string& job_id) {
  std::string prefix = transport::shm::segment_prefix(job_id);
  DIR* d = ::opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
      (void)transport::shm::unlink(std::string("/") + e->d_name);
  }
  ::closedir(d);
}

uint64_t pid_namespace() {
  struct stat st{};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int remove_segments_of_dead_jobs() {
  const uint64_t ns = pid_namespace();
  if (ns == 0) return 0;
  DIR* d = ::opendir("/dev/shm");
  if (!d) return 0;
  std::vector<std::string> dead;
  while (dirent* e = ::readdir(d)) {
    std::string job = transport::shm::job_of_segment(e->d_name, transport::shm::kControlSegment);
    if (job.empty()) continue;
    const int fd = ::shm_open((std::string("/") + e->d_name).c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) continue;
    struct stat st{};
    using C = pgas::JobControl;
    char head[offsetof(C, abort)];
    const bool read = ::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() &&
                      ::pread(fd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head);
    ::close(fd);
    uint64_t magic = 0, pidns = 0;
    int32_t pid = 0;
    if (read) {
      std::memcpy(&magic, head + offsetof(C, magic), sizeof magic);
      std::memcpy(&pid, head + offsetof(C, launcher_pid), sizeof pid);
      std::memcpy(&pidns, head + offsetof(C, launcher_pidns), sizeof pidns);
    }
    if (magic == C::kMagic && pid > 0 && pidns == ns && ::kill(pid, 0) != 0 && errno == ESRCH)
      dead.push_back(std::move(job));
  }
  ::closedir(d);
  for (const std::string& id : dead) remove_job_segments(id);
  return static_cast<int>(dead.size());
}

std::string LineBuffer::take(bool all) {
  size_t end = buf_.rfind('\n');
  end = end == std::string::npos ? 0 : end + 1;
  if (buf_.size() - end >= kMaxLine) end = buf_.size();  // an overlong line goes on in pieces
  if (all) end = buf_.size();
  std::string out = buf_.substr(0, end);
  buf_.erase(0, end);
  if (!out.empty() && out.back() != '\n') out.push_back('\n');  // a partial last line, or a piece of a long one
  return out;
}

void torch_environment(int rank, int size, int local_rank, int local_size, const std::string& master_addr,
                       const std::string& master_port) {
  for (const auto& [k, v] : {std::pair{"RANK", std::to_string(rank)}, {"WORLD_SIZE", std::to_string(size)},
                             {"LOCAL_RANK", std::to_string(local_rank)}, {"LOCAL_WORLD_SIZE", std::to_string(local_size)},
                             {"MASTER_ADDR", master_addr}, {"MASTER_PORT", master_port}})
    if (!v.empty()) ::setenv(k, v.c_str(), 0);
  const std::string dir = python_dir();
  if (!dir.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    ::setenv("PYTHONPATH", (old && *old ? dir + ":" + old : dir).c_str(), 1);
  }
}

std::string python_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string exe(buf, static_cast<size_t>(n));
  const std::string bin = exe.substr(0, exe.rfind('/'));
  for (const std::string& dir : {bin + "/../python", bin + "/../lib/tessera/python"})
    if (::access((dir + "/tessera_torch").c_str(), F_OK) == 0) return dir;
  return "";
}

}  // namespace tessera::run
