#include "transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/config.h"

namespace tessera::transport::shm {

std::string segment_prefix(const std::string& job_id) {
  std::string p = "tessera-";
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

Result<void*> create(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("shm_open(" + name + ")");
  ::fchmod(fd, 0600);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status st = sys_error(fmt::format("ftruncate({}, {})", name, config::format_size(bytes)));
    ::close(fd);
    ::shm_unlink(name.c_str());
    return st;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    Status st = sys_error(fmt::format("mmap({}, {})", name, config::format_size(bytes)));
    ::shm_unlink(name.c_str());
    return st;
  }
  return p;
}

Result<void*> open_map(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("shm_open(" + name + ")");
  struct stat st{};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    return make_status(Code::kInvalidArgument, "segment {} has {} bytes, expected {}", name,
                       static_cast<long long>(st.st_size), bytes);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return sys_error(fmt::format("mmap({}, {})", name, config::format_size(bytes)));
  return p;
}

Status unlink(const std::string& name) {
  if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT) return sys_error("shm_unlink(" + name + ")");
  return Status::ok();
}

void unmap(void* addr, size_t bytes) {
  if (addr) ::munmap(addr, bytes);
}

Result<void*> map_private(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return sys_error(fmt::format("mmap(anonymous, {})", config::format_size(bytes)));
  return p;
}

}  // namespace tessera::transport::shm
