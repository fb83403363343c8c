// Template part of engine.h.
#pragma once
#include <sched.h>

#include "sync/wait.h"

namespace tessera::coll {

template <typename Done, typename Describe>
void coll_wait(const Communicator& c, Done&& done, Describe&& describe) {
  if (done()) return;
  if (c.oversubscribed) {
    // More members than CPUs: the member we wait for may need this CPU, so give it away at once.
    sync::wait_until([&] { if (done()) return true; sched_yield(); return false; }, describe);
  } else {
    sync::wait_until(done, describe);
  }
}

}  // namespace tessera::coll
