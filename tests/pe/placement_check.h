// For PE tests that reason about where PEs run: tessera-run may unbind a running job when processes outside
// it use its CPUs (tools/run/placement.h), as happens when tests run side by side. The CPU a PE published at
// start-up (sync::pe_cpu) stays the one it was started on.
#pragma once
#include <gtest/gtest.h>
#include <shmem.h>
#include <unistd.h>

#include "base/cpu.h"
#include "sync/wait.h"

// The CPU this PE was started on, as the library published it (-1: not bound to one), after checking that
// the PE still runs there, or else that tessera-run has unbound the job (it widens the threads first, then
// raises the job's cpus_shared word).
inline int checked_start_cpu() {
  const int published = tessera::sync::pe_cpu(shmem_my_pe());
  const int now = tessera::bound_cpu();
  if (now != published) {
    for (int i = 0; i < 100 && !tessera::sync::cpus_shared(); ++i) usleep(10000);
    EXPECT_TRUE(tessera::sync::cpus_shared() && now < 0)
        << "PE " << shmem_my_pe() << " published CPU " << published << " but runs on " << now
        << " (-1: several), and tessera-run did not say it unbound the job";
  }
  return published;
}
