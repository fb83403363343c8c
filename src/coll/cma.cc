#include "coll/cma.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/config.h"
#include "base/log.h"
#include "base/memcopy.h"
#include "coll/comm.h"
#include "sync/peer.h"

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

namespace {
// One loop for both directions: `write` moves local -> member m, else member m -> local.
void cma_copy_direct(const Communicator& c, int m, char* local, char* remote, size_t bytes, bool write) {
  while (bytes) {
    iovec l{local, bytes}, r{remote, bytes};
    const pid_t pid = static_cast<pid_t>(c.pids[m]);
    ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got <= 0) {
      const int e = got < 0 ? errno : EIO;
      if (e == ESRCH)  // the member's process is gone: its death, not this copy, is what ends the job
        sync::peer_vanished(fmt::format("{}: rank {} (PE {}, pid {}) is gone ({} failed: {})", c.name, m, c.world[m],
                                        c.pids[m], write ? "process_vm_writev" : "process_vm_readv", std::strerror(e)));
      log::fatal("{}: {} {} bytes at {} {} rank {} (PE {}, pid {}) with {} failed: {} "
                 "(set TESSERA_COLL_CMA=0 to use the staged algorithms)",
                 c.name, write ? "writing" : "reading", bytes, static_cast<const void*>(remote), write ? "of" : "from",
                 m, c.world[m], c.pids[m], write ? "process_vm_writev" : "process_vm_readv", std::strerror(e));
    }
    local += got;
    remote += got;
    bytes -= static_cast<size_t>(got);
  }
}

// When the two addresses alias (base/memcopy.h: copy_aliases), the kernel's copy runs several times slower
// (docs/journal.md, "memcopy and aliasing copies"): the data goes through a private bounce buffer placed at
// the remote address's offset within a page, piece by piece, and memcopy() moves it on the local side, from
// cache, far faster than the kernel's copy.
constexpr size_t kBouncePiece = size_t{256} << 10;
char* bounce_like(const char* remote) {
  thread_local std::unique_ptr<char[]> buf;
  if (!buf) buf = std::make_unique<char[]>(kBouncePiece + 4096);
  return at_page_offset_of(buf.get(), remote);
}

void cma_copy(const Communicator& c, int m, char* local, char* remote, size_t bytes, bool write) {
  if (bytes < 4096 || !(write ? copy_aliases(remote, local) : copy_aliases(local, remote))) {
    cma_copy_direct(c, m, local, remote, bytes, write);
    return;
  }
  while (bytes) {
    const size_t k = std::min(bytes, kBouncePiece);
    char* b = bounce_like(remote);
    if (write) {
      memcopy(b, local, k);
      cma_copy_direct(c, m, b, remote, k, true);
    } else {
      cma_copy_direct(c, m, b, remote, k, false);
      memcopy(local, b, k);
    }
    local += k;
    remote += k;
    bytes -= k;
  }
}
}  // namespace

void cma_read(const Communicator& c, int m, void* dst, const void* src, size_t bytes) {
  cma_copy(c, m, static_cast<char*>(dst), const_cast<char*>(static_cast<const char*>(src)), bytes, false);
}

void cma_write(const Communicator& c, int m, void* dst, const void* src, size_t bytes) {
  cma_copy(c, m, const_cast<char*>(static_cast<const char*>(src)), static_cast<char*>(dst), bytes, true);
}

}  // namespace tessera::coll
