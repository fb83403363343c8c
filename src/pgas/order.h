// Ordering and completion of one-sided operations on the shared-memory path.
//
// Every put, get and atomic on a peer of this host is a load or store issued by the calling thread, so an
// operation is complete when it returns, except for the visibility ordering of stores:
//   fence  orders this PE's earlier puts/AMOs to each PE before its later ones. x86 keeps ordinary stores in
//          order, so only streaming (non-temporal) stores need an sfence.
//   quiet  completes all earlier operations and makes them visible to every PE: a full fence (mfence), which
//          also drains streaming stores.
// Non-blocking (nbi) calls are performed eagerly, so quiet has nothing left to wait for.
#pragma once
#include <immintrin.h>

#include <atomic>

namespace tessera::pgas {

inline void fence() {
  _mm_sfence();
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
inline void quiet() { std::atomic_thread_fence(std::memory_order_seq_cst); }

}  // namespace tessera::pgas
