// Staging stores: ordinary or streaming, chosen per member from the measured cost of each (common.h).
#include "base/config.h"
#include "base/cpu.h"
#include "base/status.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {
namespace {
const config::Var<std::string> kStores{
    "TESSERA_STAGE_STORES", "auto",
    "Stores of large writes into collective staging: auto (each member times both kinds and uses streaming "
    "stores while ordinary ones cost several times as much), ordinary or streaming"};

// Writes below this use ordinary stores, untimed (copy() streams only from 64 KiB).
constexpr size_t kTimedMin = size_t{64} << 10;
// One large write in kProbeEvery uses the other kind of store, so that its cost stays known.
constexpr uint32_t kProbeEvery = 32;
// Streaming stores start when ordinary ones cost more than kEnter times as much per byte, and stop when
// they cost less than kLeave times as much (the ratio measured 5-7 at 256 KiB and 1.3-3.8 at 64 MiB across
// CCXs, 0.2-0.3 and 0.8-1.3 between CPUs sharing a cache).
constexpr double kEnter = 2.0, kLeave = 1.5;

void note(StageStores& s, bool streamed, uint64_t ns, size_t bytes) {
  const double c = static_cast<double>(ns) / static_cast<double>(bytes);
  double& e = s.cost[streamed];
  e = e == 0 ? c : 0.75 * e + 0.25 * c;
  if (s.cost[0] > 0 && s.cost[1] > 0) s.stream = s.cost[0] > (s.stream ? kLeave : kEnter) * s.cost[1];
}

// The kind of store for this write: the one in use, or the other one once in kProbeEvery writes.
bool pick(StageStores& s) {
  const uint32_t w = s.writes++;
  if (s.forced) return s.stream = s.forced == 2;
  return (w % kProbeEvery == kProbeEvery - 1) != s.stream;
}
}  // namespace

bool stage_streams(const Communicator& c, size_t bytes) {
  return bytes >= kTimedMin && (c.stores.forced ? c.stores.forced == 2 : c.stores.stream);
}

void stage(Communicator& c, void* slot, const void* src, size_t bytes) {
  if (bytes < kTimedMin) return copy(slot, src, bytes);
  StageStores& s = c.stores;
  const bool st = pick(s);
  const uint64_t t0 = fast_now_ns();
  copy(slot, src, bytes, st);
  note(s, st, fast_now_ns() - t0, bytes);
}

void stage2(Communicator& c, void* out, void* slot, const void* src, size_t bytes, bool stream_out) {
  if (bytes < kTimedMin || out == src) {
    if (out == src) return stage(c, slot, src, bytes);
    return copy2(out, slot, src, bytes, stream_out);
  }
  StageStores& s = c.stores;
  const bool st = pick(s);
  const uint64_t t0 = fast_now_ns();
  // Ordinary stores: one pass writing both. Streaming ones: the slot, then the output from src (in cache
  // now). Either way the time of both writes is what the member pays.
  if (st) {
    copy(slot, src, bytes, true);
    copy(out, src, bytes, stream_out);
  } else {
    copy2(out, slot, src, bytes, stream_out);
  }
  note(s, st, fast_now_ns() - t0, bytes);
}

}  // namespace tessera::coll::algos

namespace tessera::coll {
int stage_stores_setting() {
  static const int f = [] {
    const std::string& s = algos::kStores.get();
    if (s == "ordinary") return 1;
    if (s == "streaming") return 2;
    if (s != "auto")
      config::fatal_config(invalid_arg("TESSERA_STAGE_STORES={}: expected auto, ordinary or streaming", s));
    return 0;
  }();
  return f;
}
}  // namespace tessera::coll
