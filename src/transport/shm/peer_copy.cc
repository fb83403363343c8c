#include "transport/shm/peer_copy.h"

#include <sys/types.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "base/memcopy.h"

namespace tessera::transport::shm {

bool peer_probe(int64_t pid, const void* remote, uint64_t expect) {
  uint64_t got = 0;
  iovec l{&got, sizeof got}, r{const_cast<void*>(remote), sizeof got};
  return process_vm_readv(static_cast<pid_t>(pid), &l, 1, &r, 1, 0) == static_cast<ssize_t>(sizeof got) &&
         got == expect;
}

int peer_copy_direct(int64_t pid, void* local_v, void* remote_v, size_t bytes, bool write) {
  char* local = static_cast<char*>(local_v);
  char* remote = static_cast<char*>(remote_v);
  while (bytes) {
    iovec l{local, bytes}, r{remote, bytes};
    const pid_t p = static_cast<pid_t>(pid);
    const ssize_t got = write ? process_vm_writev(p, &l, 1, &r, 1, 0) : process_vm_readv(p, &l, 1, &r, 1, 0);
    if (got <= 0) return got < 0 ? errno : EIO;
    local += got;
    remote += got;
    bytes -= static_cast<size_t>(got);
  }
  return 0;
}

namespace {
// The bounce buffer's piece (docs/journal.md, "memcopy and aliasing copies").
constexpr size_t kBouncePiece = size_t{256} << 10;
char* bounce_like(const char* remote) {
  thread_local std::unique_ptr<char[]> buf;
  if (!buf) buf = std::make_unique<char[]>(kBouncePiece + 4096);
  return at_page_offset_of(buf.get(), remote);
}
}  // namespace

int peer_copy(int64_t pid, void* local_v, void* remote_v, size_t bytes, bool write) {
  char* local = static_cast<char*>(local_v);
  char* remote = static_cast<char*>(remote_v);
  if (bytes < 4096 || !(write ? copy_aliases(remote, local) : copy_aliases(local, remote)))
    return peer_copy_direct(pid, local, remote, bytes, write);
  while (bytes) {
    const size_t k = std::min(bytes, kBouncePiece);
    char* b = bounce_like(remote);
    if (write) {
      memcopy(b, local, k);
      if (int e = peer_copy_direct(pid, b, remote, k, true)) return e;
    } else {
      if (int e = peer_copy_direct(pid, b, remote, k, false)) return e;
      memcopy(local, b, k);
    }
    local += k;
    remote += k;
    bytes -= k;
  }
  return 0;
}

}  // namespace tessera::transport::shm
