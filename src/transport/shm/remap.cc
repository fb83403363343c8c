// Registered memory in place (remap.h).
#include "transport/shm/remap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/memcopy.h"
#include "transport/shm/peer_copy.h"

namespace tessera::transport::shm {
namespace {

// Copies whole pages of this process, which hold other objects beside the registered buffer: through the
// kernel (process_vm_readv/writev on this process), whose copy neither reads nor writes through a sanitizer's
// instrumentation, so the heap's red zones around other objects on those pages are not reported. `to_range`:
// into the range (local = the copy, remote = the range), else out of it.
void copy_pages(char* range, char* copy, size_t bytes, bool to_range) {
  if (peer_copy_direct(getpid(), copy, range, bytes, to_range) == 0) return;
  if (to_range) memcopy(range, copy, bytes);
  else memcopy(copy, range, bytes);
}

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// The lines of /proc/self/maps that cover [lo, hi) must tile it without a gap, each readable, writable and
// private ("rw-p"); otherwise the first line that is not, or the gap, is named.
Status check_private_rw(uintptr_t lo, uintptr_t hi) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return make_status(Code::kSystem, "cannot read /proc/self/maps: {}", std::strerror(errno));
  char line[512];
  uintptr_t covered = lo;
  Status st = Status::ok();
  while (covered < hi && std::fgets(line, sizeof line, f)) {
    uintptr_t a = 0, b = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &a, &b, perms) != 3 || b <= covered) continue;
    if (a > covered) break;  // a gap before this mapping
    if (std::strcmp(perms, "rw-p") != 0) {
      line[std::strcspn(line, "\n")] = '\0';
      st = invalid_arg("the page at {:#x} is not private memory this process may read and write (its mapping: {})",
                       covered, line);
      break;
    }
    covered = b;
  }
  std::fclose(f);
  if (st.is_ok() && covered < hi) st = invalid_arg("the page at {:#x} is not mapped in this process", covered);
  return st;
}

}  // namespace

Result<SharedRange> share_in_place(void* p, size_t bytes) {
  const size_t page = page_size();
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  if (bytes == 0 || start + bytes < start) return invalid_arg("{} bytes at {} is not a range of memory", bytes, p);
  const uintptr_t lo = start & ~(page - 1), hi = (start + bytes + page - 1) & ~(page - 1);
  TS_RETURN_IF_ERROR(check_private_rw(lo, hi));
  SharedRange r{reinterpret_cast<char*>(lo), hi - lo, -1};
  r.fd = memfd_create("tessera-registered", MFD_CLOEXEC);
  if (r.fd < 0) return make_status(Code::kSystem, "memfd_create: {}", std::strerror(errno));
  if (ftruncate(r.fd, static_cast<off_t>(r.bytes)) != 0) {
    const int e = errno;
    close(r.fd);
    return make_status(Code::kOutOfMemory, "a memory file of {} bytes: {}", r.bytes, std::strerror(e));
  }
  void* tmp = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
  if (tmp == MAP_FAILED) {
    const int e = errno;
    close(r.fd);
    return make_status(Code::kSystem, "mapping a memory file of {} bytes: {}", r.bytes, std::strerror(e));
  }
  copy_pages(r.lo, static_cast<char*>(tmp), r.bytes, false);
  // The file's pages, now holding the copy, mapped over the range: the private pages go in the same call.
  // (Not mremap of the copy onto the range: in a process with UCX loaded, whose memory hooks wrap mremap,
  // the mapping stayed where the copy was and the range kept its private pages.)
  void* at = mmap(r.lo, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, r.fd, 0);
  const int e = errno;
  munmap(tmp, r.bytes);
  if (at != r.lo) {
    close(r.fd);
    return make_status(Code::kSystem, "mapping the shared pages over {} bytes at {}: {}", r.bytes,
                       static_cast<void*>(r.lo), std::strerror(e));
  }
  return r;
}

Status unshare(const SharedRange& r) {
  void* tmp = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED) return make_status(Code::kOutOfMemory, "{} bytes of private memory: {}", r.bytes, std::strerror(errno));
  copy_pages(r.lo, static_cast<char*>(tmp), r.bytes, false);
  void* at = mmap(r.lo, r.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  const int e = errno;
  if (at == r.lo) copy_pages(r.lo, static_cast<char*>(tmp), r.bytes, true);
  munmap(tmp, r.bytes);
  close(r.fd);
  if (at != r.lo)
    return make_status(Code::kSystem, "mapping private pages back over {} bytes at {}: {}", r.bytes,
                       static_cast<void*>(r.lo), std::strerror(e));
  return Status::ok();
}

Result<char*> map_peer_range(int64_t pid, int fd, size_t bytes) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int mine = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0) return make_status(Code::kSystem, "cannot open {}: {}", path, std::strerror(errno));
  // Populated now, at registration, rather than page by page in the first collectives.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, mine, 0);
  const int e = errno;
  close(mine);
  if (p == MAP_FAILED) return make_status(Code::kSystem, "cannot map {} bytes of {}: {}", bytes, path, std::strerror(e));
  return static_cast<char*>(p);
}

void unmap_peer_range(char* p, size_t bytes) {
  if (p) munmap(p, bytes);
}

}  // namespace tessera::transport::shm
