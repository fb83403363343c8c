// Between hosts: tagged messages through each peer's transport (transport.h: send/recv), the patterns the
// rows of hier/rows.cc compose with the host-local communicator's collectives, and the two-level byte
// movers (allgather, broadcast, alltoall of bytes) that several rows share.
// Messages of one communicator carry a tag from its uid and the sender's PE; a pair's messages of one
// communicator are matched in the order sent, and every member issues them in the same program order.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "base/status.h"
#include "coll/hier/layer.h"

namespace tessera::transport {
struct Transport;
}

namespace tessera::coll {

// Tags: Hier::key << kPeBits | the sender's PE.
inline constexpr int kPeBits = 24;

// Messages between ranks of `c` on different hosts.
struct Net {
  Communicator& c;
  Hier& h;
  // Resilient mode: requests posted and not yet waited for. A row that stops early (a failure: a wait that
  // throws, a sub-call that returns its error) leaves them here, and the destructor hands them back to the
  // transport (abandon), which finishes them without touching the row's buffers again.
  std::vector<std::pair<int, void*>> open{};
  ~Net();
  int pe(int rank) const { return c.world[static_cast<size_t>(rank)]; }
  const transport::Transport* t(int rank) const;
  void* send(int rank, const void* buf, size_t bytes);
  void* recv(int rank, void* buf, size_t bytes);
  void wait(int rank, void* req, const char* what, size_t bytes);
  // Sends `out` to `to` while receiving `in` from `from`.
  void exchange(int to, const void* out, size_t out_bytes, int from, void* in, size_t in_bytes, const char* what);
};

char* grow(std::vector<char>& v, size_t n);  // v's data, at least n bytes
// Block b of `count` elements split into n: [begin, begin + size).
size_t block_begin(size_t count, int n, int b);
size_t block_size(size_t count, int n, int b);
void fold2(void* dst, const void* x, const void* y, size_t count, DType t, Op op);  // dst = x op y

// Among `group` (ranks, one per host; this rank is group[gi]). Allreduce of `in` into `out` (the same or
// disjoint buffers), out of place without a copy: the first step reads `in` and every fold writes `out`.
// Recursive doubling needs a power-of-two group.
void net_allreduce_doubling(Net& net, const std::vector<int>& group, int gi, const char* in, char* out, size_t count,
                            DType t, Op op);
void net_allreduce_ring(Net& net, const std::vector<int>& group, int gi, const char* in, char* out, size_t count,
                        DType t, Op op);
// Allreduce (sum) of float32 among `group`, the values coded for the wire (hier/compress.h): each member
// codes `in` (plus `residual`, which then holds what the code lost; null: no feedback), the codes are
// allgathered, and every member sums the decoded codes in group order into `out`, so every member holds the
// same bits. in may equal out.
void net_allreduce_compressed(Net& net, const std::vector<int>& group, int gi, const float* in, float* out,
                              size_t count, Compress c, float* residual);
// Ring allgather: member i's block is [offs[i], offs[i] + lens[i]) bytes of buf.
void net_allgatherv(Net& net, const std::vector<int>& group, int gi, char* buf, const std::vector<size_t>& offs,
                    const std::vector<size_t>& lens);
// Binomial-tree broadcast from group[ri].
void net_bcast(Net& net, const std::vector<int>& group, int gi, int ri, char* buf, size_t bytes);
// Dissemination barrier.
void net_barrier(Net& net, const std::vector<int>& group, int gi);

// A collective on the host-local communicator.
Status local(Hier& h, Kind kind, const Args& a);

// Two levels, every member of `c` calls. Every rank's `lens[r]` bytes, packed by rank at offs[r] of `out`, on
// every rank (mine at `in`).
Status allgatherv_bytes(Communicator& c, Hier& h, const void* in, char* out, const std::vector<size_t>& offs,
                        const std::vector<size_t>& lens);
// Broadcast of `bytes` at `buf` from rank `root`.
Status bcast_bytes(Communicator& c, Hier& h, char* buf, size_t bytes, int root);
// Alltoallv of bytes: slens[r] bytes at send + soffs[r] to rank r, rlens[r] bytes from it at recv + roffs[r].
Status alltoallv_bytes(Communicator& c, Hier& h, const char* send, const size_t* soffs, const size_t* slens,
                       char* recv, const size_t* roffs, const size_t* rlens);

}  // namespace tessera::coll
