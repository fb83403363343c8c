// Point-to-point send/recv over a communicator, with NCCL-style groups.
//
// Channel s->d is a ring buffer of TESSERA_P2P_BUFFSIZE bytes in s's segment. s advances sent[d] (in its
// control block) after writing, d advances taken[s] (in its own) after reading; both counters only grow.
// Each message starts with a 64-byte header carrying its size, so a receive that expects a different size
// ends the job with both sizes named instead of desynchronising the stream. Messages between a pair in one
// direction are delivered in order (FIFO); messages of different pairs are independent.
//
// Groups: between group_start() and group_end(), send/recv calls are queued (buffers must stay valid) and
// group_end() progresses all of them together, so exchanges that would deadlock one by one (both sides
// sending first) complete. Outside a group each call runs alone and blocks until its data is copied.
// Collectives inside a group run at once (they are not aggregated). Groups are per thread.
#pragma once
#include <cstddef>

#include "base/status.h"
#include "coll/comm.h"

namespace tessera::coll {

Status p2p_send(Communicator& c, const void* buf, size_t bytes, int peer);
Status p2p_recv(Communicator& c, void* buf, size_t bytes, int peer);
// Receives the next message from whichever rank has one waiting (members on one host only; not in a group);
// returns its source.
Result<int> p2p_recv_any(Communicator& c, void* buf, size_t bytes);
void group_start();
Status group_end();
int group_depth();

}  // namespace tessera::coll
