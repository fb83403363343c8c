// Staging stores: ordinary or streaming, chosen per call from the measured time of earlier calls (common.h).
#include <algorithm>

#include "base/config.h"
#include "base/cpu.h"
#include "base/status.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {
namespace {
const config::Var<std::string> kStores{
    "TESSERA_STAGE_STORES", "auto",
    "Stores of large writes into collective staging: auto (each member times calls made with each kind and "
    "uses the faster), ordinary or streaming"};

// Staging writes below kStreamCopyMin use ordinary stores (copy() streams only from there); calls below
// kStageTimedMin per rank are not timed and use ordinary stores (comm.h: stage_call_begin).
// Of every kExplore calls of a collective and size class, one runs with each kind of store whatever the
// choice, so that both costs stay current (the host may move the CPUs meanwhile).
constexpr uint32_t kExplore = 32;
// The first timed calls of an entry alternate the two kinds (ordinary first), three of each: one of each
// (the best being kept from then on by a mean) let a single slow first sample hold a kind back, and a 1 MiB
// allgather mostly stayed on the slower kind (docs/coll.md, staging stores). From 8 MiB per rank a call outlasts a
// preemption's noise and one of each is enough (a benchmark's few calls of 64 MiB are not spent exploring).
constexpr uint32_t first_timed(size_t bytes_per_rank) { return bytes_per_rank >= (size_t{8} << 20) ? 2 : 6; }
}  // namespace

bool stage_streams(const Communicator& c, size_t bytes) { return bytes >= kStreamCopyMin && c.stores.stream; }

void stage(Communicator& c, void* slot, const void* src, size_t bytes) {
  copy(slot, src, bytes, c.stores.stream ? Stores::kStream : Stores::kCached);
}

void stage2(Communicator& c, void* out, void* slot, const void* src, size_t bytes, Stores out_stores) {
  if (out == src) return stage(c, slot, src, bytes);
  if (!stage_streams(c, bytes)) return copy2(out, slot, src, bytes, out_stores);
  // Streaming stores to the slot, then the output from src (in cache now).
  copy(slot, src, bytes, Stores::kStream);
  copy(out, src, bytes, out_stores);
}

}  // namespace tessera::coll::algos

namespace tessera::coll {
int stage_stores_setting() {
  static const int f = static_cast<int>(config::one_of(algos::kStores, {"auto", "ordinary", "streaming"}));
  return f;
}

// Every member makes the same calls, so every member's count of an entry is the same and the calls run with
// one kind of store on every member are the same calls: the first of an entry warms up (page faults) and
// runs ordinary, the next first_timed() alternate ordinary and streaming and are timed (each kind's best
// kept), then each member uses the kind with the lower mean time per byte, except on the calls that keep
// the other one measured.
uint64_t stage_call_begin_timed(Communicator& c, Kind kind, size_t bytes_per_rank) {
  StageStores& s = c.stores;
  s.timing = nullptr;
  int cls = 0;
  for (size_t b = bytes_per_rank / kStageTimedMin; b > 1 && cls < kStageClasses - 1; b >>= 1) ++cls;
  StageStores::Entry& e = s.entry[static_cast<int>(kind)][cls];
  const uint32_t k = e.calls++;
  if (k == 0) {
    s.stream = false;
    return 0;
  }
  if (k <= algos::first_timed(bytes_per_rank)) s.stream = k % 2 == 0;
  else if (k % algos::kExplore == 0) s.stream = false;
  else if (k % algos::kExplore == algos::kExplore / 2) s.stream = true;
  else s.stream = e.cost[1] < e.cost[0];
  s.timing = &e;
  return fast_now_ns();
}

void stage_call_end_timed(Communicator& c, uint64_t t0, size_t bytes_per_rank) {
  StageStores& s = c.stores;
  const double ns = static_cast<double>(fast_now_ns() - t0) / static_cast<double>(bytes_per_rank);
  double& e = s.timing->cost[s.stream];
  // The first timed calls keep each kind's best (one preempted call must not hold a kind back for dozens
  // of calls); later ones follow its mean.
  if (e == 0) e = ns;
  else e = s.timing->calls <= algos::first_timed(bytes_per_rank) + 1 ? std::min(e, ns) : 0.7 * e + 0.3 * ns;
  s.timing = nullptr;
}
}  // namespace tessera::coll
