#include "coll/cma.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "base/config.h"
#include "base/log.h"
#include "coll/comm.h"

namespace tessera::coll {
namespace {
const config::Var<bool> kCma{
    "TESSERA_COLL_CMA", true,
    "Let large collectives copy straight from peers' buffers with process_vm_readv (single copy) when "
    "every member of the communicator can; 0 keeps every collective on the staged algorithms"};
}  // namespace

bool cma_enabled() { return kCma.get(); }

bool cma_probe(int64_t pid, const void* remote, uint64_t expect) {
  uint64_t got = 0;
  iovec l{&got, sizeof got}, r{const_cast<void*>(remote), sizeof got};
  return process_vm_readv(static_cast<pid_t>(pid), &l, 1, &r, 1, 0) == static_cast<ssize_t>(sizeof got) &&
         got == expect;
}

void cma_read(const Communicator& c, int m, void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  while (bytes) {
    iovec l{d, bytes}, r{const_cast<char*>(s), bytes};
    ssize_t got = process_vm_readv(static_cast<pid_t>(c.pids[m]), &l, 1, &r, 1, 0);
    if (got <= 0) {
      const int e = got < 0 ? errno : EIO;
      log::fatal("{}: reading {} bytes at {} from rank {} (PE {}, pid {}) with process_vm_readv failed: {} "
                 "(set TESSERA_COLL_CMA=0 to use the staged algorithms)",
                 c.name, bytes, static_cast<const void*>(s), m, c.world[m], c.pids[m], std::strerror(e));
    }
    d += got;
    s += got;
    bytes -= static_cast<size_t>(got);
  }
}

}  // namespace tessera::coll
