#include "pgas/data_segment.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/config.h"

namespace tessera::pgas {
namespace {
const config::Var<bool> kSymData{"TESSERA_SYMMETRIC_DATA", true,
                                 "Make the executable's global and static variables symmetric (remotely "
                                 "accessible), as OpenSHMEM programs expect"};

int find_cb(dl_phdr_info* info, size_t, void* out) {
  auto* seg = static_cast<DataSegment*>(out);
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t lo = 0, hi = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) {
      lo = info->dlpi_addr + ph.p_vaddr;
      hi = lo + ph.p_memsz;
    } else if (ph.p_type == PT_GNU_RELRO) {
      relro_end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    }
  }
  if (hi > lo) {
    if (relro_end > lo) lo = relro_end;
    lo = (lo + page - 1) & ~(page - 1);
    hi = (hi + page - 1) & ~(page - 1);
    if (hi > lo) {
      seg->base = reinterpret_cast<char*>(lo);
      seg->size = hi - lo;
    }
  }
  return 1;  // the first object is the executable: stop there
}
// Copies the data segment word by word. Not instrumented: the segment holds every global of the program,
// including AddressSanitizer's red zones between them, which an instrumented memcpy would report.
__attribute__((no_sanitize_address)) void copy_segment(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<volatile uint64_t*>(dst);
  auto* s = static_cast<const volatile uint64_t*>(src);
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) d[i] = s[i];
}
}  // namespace

bool symmetric_data_enabled() { return kSymData.get(); }

DataSegment find_data_segment() {
  DataSegment seg;
  dl_iterate_phdr(find_cb, &seg);
  return seg;
}

Status share_data_segment(const DataSegment& seg, const std::string& name, int* keep_fd) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("shm_open(" + name + ")");
  ::fchmod(fd, 0600);  // as shm::create(): the umask must not take the peers' read and write away
  if (::ftruncate(fd, static_cast<off_t>(seg.size)) != 0) {
    Status st = sys_error("ftruncate(" + name + ")");
    ::close(fd);
    return st;
  }
  void* tmp = ::mmap(nullptr, seg.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (tmp == MAP_FAILED) {
    Status st = sys_error("mmap(" + name + ")");
    ::close(fd);
    return st;
  }
  copy_segment(tmp, seg.base, seg.size);
  // Replace the pages in place; their contents are identical.
  void* p = ::mmap(seg.base, seg.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  ::munmap(tmp, seg.size);
  if (p == MAP_FAILED) {
    ::close(fd);
    return sys_error("mmap(MAP_FIXED) over the data segment");
  }
  if (keep_fd) *keep_fd = fd;
  else ::close(fd);
  return Status::ok();
}

}  // namespace tessera::pgas
