// Deprecated active sets (PE_start, logPE_stride, PE_size, pSync) as communicators of the engine: the
// arguments checked, the set's communicator made on its first collective, synchronised through the pSync,
// and kept until shmem_finalize (the specification lets a program reuse a set with any pSync, so the set,
// not the pSync, names it).
#pragma once

namespace tessera::coll { struct Communicator; }

namespace tessera::capi::coll {

// The communicator of the active set, made on this PE's first collective on it (collective over the set:
// every member's first call on it makes it). Bad arguments end the job with a message naming `routine`,
// the value and the limit. Thread-safe; one thread at a time uses a given set (its pSync).
tessera::coll::Communicator& set_of(const char* routine, int start, int log_stride, int size, long* psync);
// At shmem_finalize, after a barrier that is past every collective: every active set's communicator.
void release_set_comms();

}  // namespace tessera::capi::coll
