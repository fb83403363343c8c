#include "proc.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/status.h"
#include "transport/shm/segment.h"

namespace tessera::run {

void no_ucx_error_handlers() { ::setenv("UCX_HANDLE_ERRORS", "none", 0); }

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

}  // namespace tessera::run
