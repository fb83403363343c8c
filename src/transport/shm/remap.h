// Registered memory (coll.h: tesseraCommRegister): a range of a process's own private memory turned, in place,
// into shared memory that the other processes of its host can map, and turned back. The range keeps its
// addresses and contents, so the program sees no change; the pages come from an anonymous memory file
// (memfd: nothing is left in /dev/shm, and it goes when the last mapping does), which a peer of the same user
// opens through /proc/<pid>/fd, as it reads the process's memory for single-copy transfers (same rights).
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace tessera::transport::shm {

struct SharedRange {
  char* lo = nullptr;  // first page of the range
  size_t bytes = 0;    // whole pages
  int fd = -1;         // the memory file, open in this process while the range is shared
};

// Replaces the whole pages around [p, p + bytes) with a mapping of a new memory file holding the same
// contents, at the same addresses. Refuses (naming the address and the mapping found there, from
// /proc/self/maps) a range that is not wholly readable and writable private memory of this process. No other
// thread may write the range meanwhile (its writes could be lost).
Result<SharedRange> share_in_place(void* p, size_t bytes);
// Puts private anonymous pages back under the range, with the contents it has now, and closes the file.
Status unshare(const SharedRange& r);
// Maps `bytes` of the memory file `fd` of process `pid` (shared, read and write).
Result<char*> map_peer_range(int64_t pid, int fd, size_t bytes);
void unmap_peer_range(char* p, size_t bytes);

}  // namespace tessera::transport::shm
