// tessera-run's job: the PE processes, their output, the bootstrap server and the job's shared memory.
//
// Lifecycle: create the control segment and the bootstrap socket -> fork/exec N PEs -> event loop (PE exits,
// bootstrap messages, tagged output, signals, the job deadline) -> end the job -> remove every shared-memory
// object of the job. When a PE fails (non-zero exit, signal, or exit without shmem_finalize) while others
// run, the launcher prints one line naming it, raises the abort word (every waiter wakes and exits), sends
// SIGTERM, and SIGKILL after a grace period.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "options.h"
#include "pgas/runtime.h"

namespace tessera::run {

struct Pe {
  pid_t pid = -1;
  bool running = false;
  int status = 0;          // waitpid status once ended
  int out_fd = -1, err_fd = -1;
  std::string out_buf, err_buf;
  // Resilient mode: when the launcher first saw the process stopped (SIGSTOP; 0: running), and whether it
  // killed it for staying stopped (job_end.cc: check_stopped).
  uint64_t stopped_since = 0;
  bool killed_stopped = false;
};

// Runs the job; returns the launcher's exit status.
int run_job(const Options& opt);

}  // namespace tessera::run
