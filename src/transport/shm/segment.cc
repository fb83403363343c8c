#include "transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/config.h"

namespace tessera::transport::shm {

namespace {
constexpr std::string_view kHead = "tessera-";
}  // namespace

std::string segment_prefix(const std::string& job_id) {
  std::string p(kHead);
  p += job_id;
  p += '-';
  return p;
}
std::string segment_name(const std::string& job_id, const std::string& what) {
  std::string n = "/";  // appended piecewise: GCC 12 warns (-Wrestrict) on the chained operator+ here
  n += segment_prefix(job_id);
  n += what;
  return n;
}
std::string job_of_segment(std::string_view entry, std::string_view what) {
  // kHead, a non-empty job id, '-', what.
  if (entry.size() <= kHead.size() + what.size() + 1 || !entry.starts_with(kHead) || !entry.ends_with(what) ||
      entry[entry.size() - what.size() - 1] != '-')
    return {};
  return std::string(entry.substr(kHead.size(), entry.size() - kHead.size() - what.size() - 1));
}

namespace {
// Maps `fd` (anonymous private memory when negative) so that the address plus `skew` is a multiple of
// `align`: reserves `align` more address space than needed (no memory: PROT_NONE), maps the segment over the
// aligned part of it and returns the rest.
void* map_aligned(int fd, size_t bytes, size_t skew, size_t align) {
  const size_t span = bytes + align;
  void* r = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return MAP_FAILED;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(r);
  const uintptr_t at = ((lo + skew + align - 1) & ~(uintptr_t{align} - 1)) - skew;
  const int kind = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED;
  void* p =
      ::mmap(reinterpret_cast<void*>(at), bytes, PROT_READ | PROT_WRITE, kind | MAP_NORESERVE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    ::munmap(r, span);
    return MAP_FAILED;
  }
  if (at > lo) ::munmap(r, at - lo);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t end = (at + bytes + page - 1) & ~(page - 1), hi = lo + span;
  if (hi > end) ::munmap(reinterpret_cast<void*>(end), hi - end);
  return p;
}
}  // namespace

Result<void*> create(const std::string& name, size_t bytes, size_t skew, size_t align, int* keep_fd) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("shm_open(" + name + ")");
  ::fchmod(fd, 0600);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status st = sys_error(fmt::format("ftruncate({}, {})", name, config::format_size(bytes)));
    ::close(fd);
    ::shm_unlink(name.c_str());
    return st;
  }
  void* p = align ? map_aligned(fd, bytes, skew, align) : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                                                  MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (keep_fd && p != MAP_FAILED) *keep_fd = fd;
  else ::close(fd);
  if (p == MAP_FAILED) {
    Status st = sys_error(fmt::format("mmap({}, {})", name, config::format_size(bytes)));
    ::shm_unlink(name.c_str());
    return st;
  }
  return p;
}

namespace {
// Maps an open object after the checks that make it the job's (open_map's contract); closes `fd`.
Result<void*> map_checked(int fd, const std::string& name, size_t bytes) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    Status err = sys_error("fstat(" + name + ")");
    ::close(fd);
    return err;
  }
  // Every user can see a job's names in /dev/shm while they exist, so a name alone does not make an object
  // the job's: one made by another user, or open to other users, was not made by create() of this job.
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    ::close(fd);
    return make_status(Code::kInvalidArgument, "segment {} belongs to uid {} with mode {:o}; the job's are uid {}, "
                       "mode 600", name, static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 0777),
                       static_cast<unsigned>(::geteuid()));
  }
  if (static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    return make_status(Code::kInvalidArgument, "segment {} has {} bytes, expected {}", name,
                       static_cast<long long>(st.st_size), bytes);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return sys_error(fmt::format("mmap({}, {})", name, config::format_size(bytes)));
  return p;
}
}  // namespace

Result<void*> open_map(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("shm_open(" + name + ")");
  return map_checked(fd, name, bytes);
}

Result<void*> open_map_of(int pid, int fd, size_t bytes) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  int mine = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0) return sys_error("open(" + path + ")");
  return map_checked(mine, path, bytes);
}

Status unlink(const std::string& name) {
  if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT) return sys_error("shm_unlink(" + name + ")");
  return Status::ok();
}

void unmap(void* addr, size_t bytes) {
  if (addr) ::munmap(addr, bytes);
}

Result<void*> map_private(size_t bytes, size_t skew, size_t align) {
  void* p = align ? map_aligned(-1, bytes, skew, align)
                  : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return sys_error(fmt::format("mmap(anonymous, {})", config::format_size(bytes)));
  return p;
}

}  // namespace tessera::transport::shm
