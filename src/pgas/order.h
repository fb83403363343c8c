// Ordering and completion of one-sided operations on the shared-memory path.
//
// Every put, get and atomic on a peer of this host is a load or store issued by the calling thread, so an
// operation is complete when it returns, except for the visibility ordering of stores:
//   fence  orders this PE's earlier puts/AMOs to each PE before its later ones. x86 keeps ordinary stores in
//          order, so only streaming (non-temporal) stores need an sfence.
//   quiet  completes all earlier operations and makes them visible to every PE: a full fence (mfence), which
//          also drains streaming stores.
// Large non-blocking (nbi) transfers may still be in the copy engine's queue (copy_engine.h): fence and
// quiet complete them first (one load when the queue is empty). Smaller nbi calls are done eagerly.
// Peers without a mapping (another host) are reached through their transport: fence and quiet call its
// fence/quiet as well (peers.h), after one test of a word that is 0 when every peer is on this host.
#pragma once
#include <immintrin.h>

#include <atomic>

#include "pgas/copy_engine.h"
#include "pgas/peers.h"

namespace tessera::pgas {

inline void fence() {
  engine::drain_if_pending();
  _mm_sfence();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (g_routed_count) [[unlikely]] routed_fence();
}
inline void quiet() {
  engine::drain_if_pending();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_routed_count) [[unlikely]] routed_quiet();
}

}  // namespace tessera::pgas
