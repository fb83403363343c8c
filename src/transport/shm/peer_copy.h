// Single-copy access to another process's private memory on this host (cross-memory attach): one kernel
// copy between this process's buffer and a peer's, instead of two through a shared segment. Needs the right
// to ptrace the peer (same uid, and no Yama / seccomp / container rule against it): callers probe first
// (peer_probe) and keep the staged path where it fails. The collectives' single-copy algorithms use it
// through coll/single_copy.h, which names the member in errors.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera::transport::shm {

// True when process_vm_readv of 8 bytes at `remote` in process `pid` succeeds and reads `expect`.
bool peer_probe(int64_t pid, const void* remote, uint64_t expect);

// Copies `bytes` between `local` (this process) and `remote` (process `pid`): to the peer with `write`
// (process_vm_writev), from it otherwise (process_vm_readv), looping over partial copies. Returns 0, or the
// errno of the call that failed (ESRCH: the process is gone; EIO for a copy that moved nothing).
int peer_copy_direct(int64_t pid, void* local, void* remote, size_t bytes, bool write);

// As peer_copy_direct, but when the two addresses alias within a page (base/memcopy.h: copy_aliases), where
// the kernel's copy is slow (docs/journal.md, "memcopy and aliasing copies"), the data goes through a private
// bounce buffer placed like the remote address, piece by piece, and memcopy() moves it on the local side.
int peer_copy(int64_t pid, void* local, void* remote, size_t bytes, bool write);

}  // namespace tessera::transport::shm
