// The engine's barrier rows: flat and dissemination over the steps of the communicator's segment, flat over
// the LL flags. Their structure is the forms of sync/barrier_forms.h (which API reaches which row, and why
// the OpenSHMEM barrier_all takes pgas::team_sync instead, is written there); each row only says how a
// member signals (publish a step, or its LL flag) and waits (Exec::in, Exec::ll_in: deadline, flight
// recorder, the consistency check of the call against every member's).
#include "coll/algos/algos.h"
#include "coll/algos/common.h"
#include "sync/barrier_forms.h"

namespace tessera::coll::algos {

// Barrier, flat: publish, then see every member's flag (1 step).
uint64_t barrier_flat(Exec& ex, const Args&) {
  sync::barrier::flat(
      ex.rank(), ex.size(),
      [&] {
        ex.step(0);
        ex.publish(0);
      },
      [&](int m) { ex.in(m, 0); });
  return 1;
}

// Barrier, dissemination: step k publishes my round k and waits for member r-2^k only (ceil(log2 n) steps).
// A published step is visible to every member; the member r+2^k is the one that reads it.
uint64_t barrier_dissemination(Exec& ex, const Args&) {
  const int rounds = sync::barrier::dissemination(
      ex.rank(), ex.size(),
      [&](int k, int /*to: reads my step k*/) {
        ex.step(static_cast<uint64_t>(k));
        ex.publish(static_cast<uint64_t>(k));
      },
      [&](int k, int from) { ex.in(from, static_cast<uint64_t>(k)); });
  return static_cast<uint64_t>(rounds);
}

// Barrier on the LL protocol: publish my flag (the call number), see every member's, in the communicator's
// wait order (the members of my CPU first).
uint64_t barrier_ll(Exec& ex, const Args&) {
  sync::barrier::flat_in_order(
      ex.comm().wait_order,
      [&] {
        ex.ll_out(0);
        ex.ll_publish();
      },
      [&](int m) { ex.ll_in(m, 0); });
  return 0;
}

}  // namespace tessera::coll::algos
