// The single-copy path of the collectives: a member copies straight from a peer's private (user) memory,
// one copy instead of two through the staging segment, with the shared-memory transport's cross-memory
// attach (transport/shm/peer_copy.h). Communicator creation probes every pair and all members agree on the
// result (Communicator::cma), so the single-copy algorithms are selected only where they work and the staged
// ones otherwise.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera::coll {

struct Communicator;

// TESSERA_COLL_CMA (default on): off forces the staged algorithms.
bool cma_enabled();

// Copies `bytes` from `src` in member m's address space to `dst` in mine. A failure (a peer passed an
// unmapped buffer, or permissions changed since the probe) ends the job with a message naming the member,
// the address and the error; a member whose process is gone is reported as gone.
void cma_read(const Communicator& c, int m, void* dst, const void* src, size_t bytes);

// Copies `bytes` from `src` in my address space to `dst` in member m's (process_vm_writev); failures end the
// job as cma_read's do.
void cma_write(const Communicator& c, int m, void* dst, const void* src, size_t bytes);

}  // namespace tessera::coll
