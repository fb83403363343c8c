// The algorithm table: one record per algorithm with its alpha-beta-gamma cost (see select/model.h).
// Costs count, per member: steps (alpha), bytes copied (beta) and reduction input bytes (gamma). B is the
// per-rank payload (Shape::bytes), S a staging slot, n the members.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "coll/algos/algos.h"
#include "coll/algos/common.h"
#include "coll/comm.h"

namespace tessera::coll {
namespace {
using M = ModelParams;
double B(const Shape& s) { return static_cast<double>(s.bytes); }
double N(const Shape& s) { return s.n; }
double S(const Shape& s) { return static_cast<double>(s.slot_bytes); }
double L(const Shape& s) { int k = 0; while ((1 << k) < s.n) ++k; return k; }
double CH(const Shape& s, double slot) { return s.bytes ? std::ceil(B(s) / slot) : 0; }
bool any(const Shape&) { return true; }
bool small_n(const Shape& s) { return s.n <= 256; }  // algos::kMaxSources
bool fits_slot(const Shape& s) { return small_n(s) && s.bytes <= s.slot_bytes; }
bool sym(const Shape& s) { return s.symmetric; }
bool sym_small_n(const Shape& s) { return s.symmetric && small_n(s); }
// Allreduce one-shot: every member reads all n inputs, which stop fitting in its L2 beyond a few hundred KiB;
// past that `direct` and `ring` are faster (docs/coll.md, `oneshot` beyond 512 KiB).
constexpr size_t kOneShotMax = size_t{512} << 10;
constexpr double kRingEfficiency = 0.85;
// Broadcast `direct` overlaps the root's copy into staging with the receivers' copies out of it, but the
// receivers read lines the root has just written, so it runs well short of its overlapped copy time, and
// priced at the full copy rate selection kept it where `cma_split` is faster (docs/coll.md, broadcast).
// Not when members outnumber CPUs: there `cma_split` does not apply and `cma` is slower than `direct`, as
// the unscaled costs order them.
constexpr double kBroadcastEfficiency = 0.5;
bool oneshot_fits(const Shape& s) { return fits_slot(s) && s.bytes <= kOneShotMax; }
bool cma(const Shape& s) { return s.cma && small_n(s); }
// A process_vm_readv call: syscall entry plus the permission check and page-table walk of the call.
constexpr double kCmaCall = 2e-6;
// process_vm_readv's rate per byte for a member whose own buffers (input + output) take `footprint` bytes:
// the in-cache rate while a loop of calls finds them in cache, the memory rate beyond (model.h).
double CMAB(const M& m, double footprint) { return footprint <= m.cache_bytes ? m.cma_beta : m.cma_beta_mem; }
// Reductions through an L2-sized bounce buffer: one process_vm_readv per peer and MiB.
double CMAR(const Shape& s) { return std::ceil(B(s) / double(1 << 20)) * kCmaCall; }
bool fits_ll(const Shape& s) { return small_n(s) && s.bytes <= kLLBytes; }
// alltoall and scatter publish all n pieces (bytes is one piece) in one LL buffer.
bool fits_ll_n(const Shape& s) { return small_n(s) && s.bytes <= kLLBytes / static_cast<size_t>(s.n); }
// An LL wait costs one cache-line handoff per peer, where a step publishes a flag line, then a data
// line, then a done line: counted as half a step.
constexpr double kLLStep = 0.5;
// LL gather and scatter: every member waits for every peer's flag, where `direct`'s non-roots wait for
// nobody. With members outnumbering CPUs and not bound to one CPU each, each of those waits is a process
// switch, and LL loses to `direct` there although it wins at 2 ranks. Bound (tessera-run's layout), LL
// waits for the members of its own CPU first and spins for the others (comm.h: wait_order), and wins again
// (docs/coll.md, LL in the other collectives).
double ll_rooted_waits(const Shape& s) { return s.oversubscribed && !s.bound ? kLLStep * (N(s) - 1) : kLLStep; }

const Algorithm kAlgorithms[] = {
    // ---- allreduce
    {Kind::kAllreduce, 0, "oneshot",
     "every member publishes its whole input and reduces all n inputs itself; 1 step (small messages)", true,
     // n inputs read from the members' staging: half a copy each (counting only the reduction, the model
     // chose it oversubscribed at sizes where `direct` is several times faster)
     oneshot_fits, [](const Shape& s, const M& m) {
       return (s.bytes ? alpha_of(s, m) : 0) + B(s) * m.beta + N(s) * B(s) * (0.5 * m.beta + m.gamma);
     },
     algos::allreduce_oneshot},
    {Kind::kAllreduce, 1, "direct",
     "reduce-scatter + allgather by direct reads: each member reduces 1/n of every chunk from all members' "
     "staging, then copies the other slices; 2 steps per chunk (symmetric buffers: read in place, 3 steps)", true, small_n,
     [](const Shape& s, const M& m) { return 2 * CH(s, S(s)) * alpha_of(s, m) + 2 * B(s) * m.beta + B(s) * m.gamma; },
     algos::allreduce_direct_zc},
    {Kind::kAllreduce, 2, "ring",
     "ring reduce-scatter + allgather, chunked and pipelined; 2(n-1)+1 steps per chunk of n slots", false, any,
     // Its bytes at 0.85 of the staged copy rate: with as many bytes per member as direct at 2 ranks (and
     // fewer steps), it still measured slower than direct at large sizes (docs/coll.md, ring), as NCCL's
     // tuner weighs its algorithms by measured efficiency.
     [](const Shape& s, const M& m) {
       return (2 * N(s) - 1) * CH(s, N(s) * S(s)) * alpha_of(s, m) +
              2 * (N(s) - 1) / N(s) * B(s) * (2 * m.beta + m.gamma) / kRingEfficiency;
     },
     algos::allreduce_ring},
    {Kind::kAllreduce, 3, "rabenseifner",
     "recursive halving (reduce-scatter) + doubling (allgather), non-powers of two folded; 2log2(n)+2 steps "
     "per chunk", false, any,
     [](const Shape& s, const M& m) {
       return (2 * L(s) + 2) * CH(s, S(s)) * alpha_of(s, m) + B(s) * (4 * m.beta + 2 * m.gamma);
     },
     algos::allreduce_rhd},
    {Kind::kAllreduce, 4, "dbtree",
     "double binary tree: each half of a chunk is reduced up one tree and broadcast down it; 4 steps per "
     "chunk, log2(n) deep", false, any,
     [](const Shape& s, const M& m) {
       return 4 * L(s) * CH(s, S(s)) * alpha_of(s, m) + B(s) * (3 * m.beta + 3 * m.gamma);
     },
     algos::allreduce_dbtree},
    {Kind::kAllreduce, 5, "cma",
     "single copy: each member reduces 1/n of the data reading peers' buffers through process_vm_readv, then "
     "copies the other slices from their outputs; 3 steps whatever the size", true, cma,
     [](const Shape& s, const M& m) {
       return 3 * alpha_of(s, m) + (N(s) - 1) * (2 * kCmaCall) + CMAR(s) / N(s) +
              2 * (N(s) - 1) / N(s) * B(s) * CMAB(m, 2 * B(s)) + B(s) * m.gamma;
     },
     algos::allreduce_cma},
    {Kind::kAllreduce, 8, "ll",
     "LL protocol: every member writes its input and the call number into its own cache lines, then reduces "
     "all n inputs; one wait per peer (up to 512 B)", true, fits_ll,
     [](const Shape& s, const M& m) { return (s.bytes ? kLLStep * alpha_of(s, m) : 0) + B(s) * m.beta + N(s) * B(s) * m.gamma; },
     algos::allreduce_ll, true},
    // ---- reduce_scatter
    {Kind::kReduceScatter, 0, "direct",
     "each member reduces its block from every member's staging; 1 step per chunk (symmetric buffers: read in "
     "place, 2 steps)", true, small_n,
     [](const Shape& s, const M& m) {
       return CH(s, S(s) / N(s)) * alpha_of(s, m) + (N(s) - 1) * B(s) * m.beta + N(s) * B(s) * m.gamma;
     },
     algos::reduce_scatter_direct_zc},
    {Kind::kReduceScatter, 1, "ring", "ring reduce-scatter, n steps per chunk", false, any,
     [](const Shape& s, const M& m) {
       return N(s) * CH(s, S(s)) * alpha_of(s, m) + (N(s) - 1) * B(s) * (m.beta + 2 * m.gamma);
     },
     algos::reduce_scatter_ring},
    {Kind::kReduceScatter, 2, "cma",
     "single copy: each member reduces its block reading peers' inputs through process_vm_readv; 2 steps", true,
     cma,
     [](const Shape& s, const M& m) {
       return 2 * alpha_of(s, m) + (N(s) - 1) * kCmaCall + CMAR(s) * (N(s) - 1) / N(s) +
              (N(s) - 1) * B(s) * CMAB(m, (N(s) + 1) * B(s)) + N(s) * B(s) * m.gamma;
     },
     algos::reduce_scatter_cma},
    {Kind::kReduceScatter, 8, "ll",
     "LL protocol: every member writes its whole input and the call number into its own cache lines, then "
     "reduces its block of all n inputs; one wait per peer (up to 512 B of input per member)", true, fits_ll_n,
     [](const Shape& s, const M& m) { return (s.bytes ? kLLStep * alpha_of(s, m) : 0) + N(s) * B(s) * (m.beta + m.gamma); },
     algos::reduce_scatter_ll, true},
    {Kind::kReduceScatterv, 0, "direct", "reduce_scatter with per-member counts, direct reads", true, small_n,
     [](const Shape& s, const M& m) { return alpha_of(s, m) + N(s) * B(s) * (m.beta + m.gamma); },
     algos::reduce_scatterv_direct},
    // ---- allgather
    {Kind::kAllgather, 0, "direct", "every member copies every member's piece from its staging; 1 step per chunk (symmetric buffers: read "
     "in place, 2 steps)",
     true, any,
     [](const Shape& s, const M& m) { return CH(s, S(s)) * alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::allgather_direct_zc},
    {Kind::kAllgather, 1, "ring", "ring allgather, n-1 steps per chunk", true, any,
     [](const Shape& s, const M& m) {
       return (N(s) - 1) * CH(s, S(s)) * alpha_of(s, m) + 2 * (N(s) - 1) * B(s) * m.beta;
     },
     algos::allgather_ring},
    {Kind::kAllgather, 2, "bruck", "Bruck allgather: ceil(log2 n) steps per chunk, doubling the pieces held",
     true, any,
     [](const Shape& s, const M& m) {
       return L(s) * CH(s, S(s) / N(s)) * alpha_of(s, m) + 3 * N(s) * B(s) * m.beta;
     },
     algos::allgather_bruck},
    {Kind::kAllgather, 3, "cma", "single copy: one process_vm_readv per peer straight into place; 2 steps", true,
     cma,
     [](const Shape& s, const M& m) {
       return 2 * alpha_of(s, m) + (N(s) - 1) * kCmaCall + (N(s) - 1) * B(s) * CMAB(m, (N(s) + 1) * B(s)) +
              B(s) * m.beta;
     },
     algos::allgather_cma},
    {Kind::kAllgather, 8, "ll",
     "LL protocol: every member writes its piece and the call number into its own cache lines, then copies "
     "every member's; one wait per peer (up to 512 B per member)", true, fits_ll,
     [](const Shape& s, const M& m) { return (s.bytes ? kLLStep * alpha_of(s, m) : 0) + (N(s) + 1) * B(s) * m.beta; },
     algos::allgather_ll, true},
    {Kind::kAllgatherv, 0, "direct", "allgather with per-member counts, direct reads", true, any,
     [](const Shape& s, const M& m) { return alpha_of(s, m) + N(s) * B(s) * m.beta; }, algos::allgatherv_direct},
    // ---- broadcast
    {Kind::kBroadcast, 0, "direct", "the root publishes each chunk, every member copies it; 1 step per chunk (symmetric buffers: "
     "read in place, 2 steps)",
     // The root's copy of chunk k + 1 overlaps the receivers' copy of chunk k: one copy time plus the first
     // chunk. Broadcast costs are those of the in-place form (MPI_Bcast, torch.distributed.broadcast); out of
     // place, the root also copies its input to its output (from cache in this algorithm, between chunks).
     true, any, [](const Shape& s, const M& m) {
       return CH(s, S(s)) * alpha_of(s, m) + (B(s) + std::min(B(s), S(s))) * m.beta /
                                                  (s.oversubscribed ? 1.0 : kBroadcastEfficiency);
     },
     algos::broadcast_direct_zc},
    {Kind::kBroadcast, 1, "chain", "pipelined chain from the root: each member copies from its predecessor",
     true, any,
     [](const Shape& s, const M& m) { return (CH(s, S(s)) + N(s) - 2) * alpha_of(s, m) + 3 * B(s) * m.beta; },
     algos::broadcast_chain},
    {Kind::kBroadcast, 2, "cma", "single copy: every member reads the root's buffer with process_vm_readv; 2 steps",
     true, cma,
     [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + kCmaCall + B(s) * CMAB(m, B(s)); },
     algos::broadcast_cma},
    {Kind::kBroadcast, 3, "cma_split",
     "single copy shared by root and receivers: the root writes 1/n of each receiver's buffer with "
     "process_vm_writev while the receivers read the rest; 2 steps (members must not outnumber CPUs)",
     true, [](const Shape& s) { return cma(s) && !s.oversubscribed; },
     [](const Shape& s, const M& m) {
       return 2 * alpha_of(s, m) + N(s) * kCmaCall + (N(s) - 1) / N(s) * B(s) * CMAB(m, B(s));
     },
     algos::broadcast_cma_split},
    {Kind::kBroadcast, 8, "ll",
     "LL protocol: the root writes its buffer and the call number into its cache lines, the others a flag; "
     "one wait per peer (up to 512 B)", true, fits_ll,
     [](const Shape& s, const M& m) { return (s.bytes ? kLLStep * alpha_of(s, m) : 0) + 2 * B(s) * m.beta; },
     algos::broadcast_ll, true},
    // ---- reduce
    {Kind::kReduce, 0, "oneshot", "every member publishes its input, the root reduces all; 1 step", true,
     fits_slot, [](const Shape& s, const M& m) { return (s.bytes ? alpha_of(s, m) : 0) + B(s) * m.beta + N(s) * B(s) * m.gamma; },
     algos::reduce_oneshot},
    {Kind::kReduce, 1, "direct",
     "each member reduces 1/n of every chunk, the root gathers the slices; 2 steps per chunk", true, small_n,
     [](const Shape& s, const M& m) { return 2 * CH(s, S(s)) * alpha_of(s, m) + 2 * B(s) * m.beta + B(s) * m.gamma; },
     algos::reduce_direct},
    {Kind::kReduce, 8, "ll",
     "LL protocol: every member writes its input and the call number into its own cache lines, the root "
     "reduces all n inputs; one wait per peer (up to 512 B)", true, fits_ll,
     [](const Shape& s, const M& m) { return (s.bytes ? kLLStep * alpha_of(s, m) : 0) + B(s) * m.beta + N(s) * B(s) * m.gamma; },
     algos::reduce_ll, true},
    // ---- gather, scatter
    {Kind::kGather, 0, "direct", "every member publishes its piece, the root copies them; 1 step per chunk",
     true, any, [](const Shape& s, const M& m) { return CH(s, S(s)) * alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::gather_direct},
    {Kind::kScatter, 0, "direct", "the root publishes one piece per member, each copies its own", true, any,
     [](const Shape& s, const M& m) { return CH(s, S(s) / N(s)) * alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::scatter_direct},
    {Kind::kGather, 8, "ll",
     "LL protocol: every member writes its piece and the call number into its own cache lines, the root "
     "copies them; one wait per peer (up to 512 B per member)", true, fits_ll,
     [](const Shape& s, const M& m) { return (s.bytes ? ll_rooted_waits(s) * alpha_of(s, m) : 0) + (N(s) + 1) * B(s) * m.beta; },
     algos::gather_ll, true},
    {Kind::kScatter, 8, "ll",
     "LL protocol: the root writes its n pieces and the call number into its cache lines, the others a flag; "
     "each copies its piece; one wait per peer (up to 512 B in all)", true, fits_ll_n,
     [](const Shape& s, const M& m) { return (s.bytes ? ll_rooted_waits(s) * alpha_of(s, m) : 0) + (N(s) + 1) * B(s) * m.beta; },
     algos::scatter_ll, true},
    {Kind::kGatherv, 0, "direct", "gather with per-member counts: the counts first, then as gather direct", true, any,
     [](const Shape& s, const M& m) { return alpha_of(s, m) + N(s) * B(s) * m.beta; }, algos::gatherv_direct},
    {Kind::kScatterv, 0, "direct", "scatter with per-member counts: the root's counts first, then as scatter direct",
     true, any, [](const Shape& s, const M& m) { return alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::scatterv_direct},
    // ---- alltoall
    {Kind::kAlltoall, 0, "direct",
     "every member publishes its n pieces, each reads its own from everyone (pairwise order); 1 step per "
     "chunk (symmetric buffers: read in place, 2 steps)", true, any,
     // n - 1 pieces staged and copied out, my own piece copied once
     [](const Shape& s, const M& m) {
       return CH(s, std::min(S(s) / N(s), static_cast<double>(algos::kAlltoallPieceMax))) * alpha_of(s, m) +
              (2 * N(s) - 1) * B(s) * m.beta;
     },
     algos::alltoall_direct_zc},
    {Kind::kAlltoall, 1, "pairwise", "n-1 steps per chunk; at step j serve member r+j, take from r-j", true, any,
     [](const Shape& s, const M& m) {
       return (N(s) - 1) * CH(s, S(s)) * alpha_of(s, m) + 2 * N(s) * B(s) * m.beta;
     },
     algos::alltoall_pairwise},
    {Kind::kAlltoall, 2, "bruck", "Bruck: ceil(log2 n) steps per chunk, pieces forwarded along distance bits",
     true, any,
     [](const Shape& s, const M& m) {
       return L(s) * CH(s, S(s) / N(s)) * alpha_of(s, m) + (2 + L(s)) * N(s) * B(s) * m.beta;
     },
     algos::alltoall_bruck},
    {Kind::kAlltoall, 3, "cma",
     "single copy: every member reads its piece of each peer's input with process_vm_readv; 2 steps", true, cma,
     [](const Shape& s, const M& m) {
       return 2 * alpha_of(s, m) + (N(s) - 1) * kCmaCall + (N(s) - 1) * B(s) * CMAB(m, 2 * N(s) * B(s)) +
              B(s) * m.beta;
     },
     algos::alltoall_cma},
    {Kind::kAlltoall, 8, "ll",
     "LL protocol: every member writes its n pieces and the call number into its own cache lines, each "
     "copies its piece of every member's; one wait per peer (up to 512 B per member in all)", true, fits_ll_n,
     [](const Shape& s, const M& m) { return (s.bytes ? kLLStep * alpha_of(s, m) : 0) + 2 * N(s) * B(s) * m.beta; },
     algos::alltoall_ll, true},
    {Kind::kAlltoallv, 0, "direct", "count matrix exchange, then direct reads of every member's pieces", true,
     any, [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + 2 * N(s) * B(s) * m.beta; },
     algos::alltoallv_direct},
    // ---- barrier
    {Kind::kBarrier, 0, "flat", "publish a flag, read every member's flag; 1 step", true, any,
     [](const Shape& s, const M& m) { return alpha_of(s, m) * (1 + (N(s) - 2) / 4); }, algos::barrier_flat},
    {Kind::kBarrier, 1, "dissemination", "ceil(log2 n) steps, one partner each", true, any,
     [](const Shape& s, const M& m) { return alpha_of(s, m) * L(s); }, algos::barrier_dissemination},
    {Kind::kBarrier, 8, "ll", "LL protocol: write the call number into my flag line, read every member's", true, any,
     [](const Shape& s, const M& m) { return kLLStep * alpha_of(s, m) * (1 + (N(s) - 2) / 4); }, algos::barrier_ll, true},
    // ---- scans
    {Kind::kInscan, 0, "direct", "every member stages each chunk; member r folds the chunks of members 0..r; 1 step "
     "per chunk", true, small_n,
     [](const Shape& s, const M& m) { return CH(s, S(s)) * alpha_of(s, m) + B(s) * m.beta + N(s) * B(s) * m.gamma; },
     algos::inscan_direct},
    {Kind::kExscan, 0, "direct", "every member stages each chunk; member r folds the chunks of members 0..r-1 (zeros "
     "on member 0); 1 step per chunk", true, small_n,
     [](const Shape& s, const M& m) { return CH(s, S(s)) * alpha_of(s, m) + B(s) * m.beta + N(s) * B(s) * m.gamma; },
     algos::exscan_direct},
    // ---- symmetric buffers (the OpenSHMEM collectives): read and write peers' buffers in place, 2 steps
    {Kind::kAllreduce, 9, "symmetric",
     "symmetric buffers: each member reduces its slice from every member's input in place and writes it into "
     "every member's output (up to 4 KiB: every member reduces everything); 2 steps", true, sym_small_n,
     [](const Shape& s, const M& m) {
       return 2 * alpha_of(s, m) + (s.bytes <= 4096 ? N(s) * B(s) * m.gamma : B(s) * (m.beta + m.gamma));
     },
     algos::allreduce_symmetric},
    {Kind::kBroadcast, 9, "symmetric", "symmetric buffers: every member copies the root's input in place; 2 steps",
     true, sym, [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + B(s) * m.beta; },
     algos::broadcast_symmetric},
    {Kind::kAllgather, 9, "symmetric", "symmetric buffers: every member copies every member's input in place; 2 steps",
     true, sym, [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::allgather_symmetric},
    {Kind::kAllgatherv, 9, "symmetric", "symmetric buffers: allgatherv by copies from every member's input; 2 steps",
     true, sym, [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::allgatherv_symmetric},
    {Kind::kAlltoall, 9, "symmetric",
     "symmetric buffers: every member copies its piece of every member's input in place; 2 steps", true, sym,
     [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + N(s) * B(s) * m.beta; },
     algos::alltoall_symmetric},
    {Kind::kInscan, 9, "symmetric", "symmetric buffers: member r folds the inputs of members 0..r in place; 2 steps",
     true, sym_small_n, [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + N(s) * B(s) * m.gamma; },
     algos::inscan_symmetric},
    {Kind::kExscan, 9, "symmetric",
     "symmetric buffers: member r folds the inputs of members 0..r-1 in place (zeros on member 0); 2 steps", true,
     sym_small_n, [](const Shape& s, const M& m) { return 2 * alpha_of(s, m) + N(s) * B(s) * m.gamma; },
     algos::exscan_symmetric},
};
}  // namespace

std::span<const Algorithm> algorithms() { return kAlgorithms; }

const Algorithm* find_algorithm(Kind k, uint8_t id) {
  for (const Algorithm& a : kAlgorithms)
    if (a.kind == k && a.id == id) return &a;
  return nullptr;
}
const Algorithm* find_algorithm(Kind k, const char* name) {
  for (const Algorithm& a : kAlgorithms)
    if (a.kind == k && std::strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

}  // namespace tessera::coll
