// Bootstrap: how a PE learns its rank, the job size and exchanges small records with its peers out of
// band (before shared memory is set up, and for setup steps that need every PE).
//
// A backend is a record of functions; kBackends lists them in order of preference and the first whose
// detect() says yes is used: the tessera-run launcher (local socket, job secret), then PMIx (mpirun, srun),
// then the TCP rendezvous (TESSERA_BOOTSTRAP=tcp://..., for any other launcher: tcp.h), then a job of one PE.
// All calls are collective over the job except info(); they are called from init only, by one thread.
#pragma once
#include <cstddef>
#include <string>

#include "base/status.h"

namespace tessera::bootstrap {

struct JobInfo {
  int rank = 0;
  int size = 1;
  std::string job_id;        // random, unpredictable: names the job's shared-memory objects
  std::string control_name;  // shm name of the job control segment ("": rank 0 makes it, see pgas init)
};

struct Backend {
  const char* name;
  bool (*detect)();
  Status (*init)(JobInfo* out);
  // Every PE contributes `bytes` bytes; `all` receives size*bytes bytes, rank order.
  Status (*allgather)(const void* mine, void* all, size_t bytes);
  Status (*barrier)();
  void (*finalize)();
  // Optional: the job spans hosts that no single launcher watches, so this PE tells the others that the job
  // ends (a fatal error here, shmem_global_exit). Null where the launcher or PMIx server sees it already.
  void (*abort)(int code) = nullptr;
};

// Set by the runtime before init: a backend that learns, on a thread of its own, that the job ended
// elsewhere (a PE died, or another host aborted) calls it with the PE named as the cause (-1: unknown) and
// the job's exit code, after printing what happened. The hook raises the job's abort word on this host, so
// every wait of this PE ends (sync/wait.h).
using AbortHook = void (*)(int pe, int code);
void set_abort_hook(AbortHook hook);
AbortHook abort_hook();

extern const Backend kLauncherBackend;
extern const Backend kPmixBackend;
extern const Backend kTcpBackend;
extern const Backend kSingleBackend;

// Picks the first backend whose detect() is true. TESSERA_BOOTSTRAP set under tessera-run or PMIx is
// ignored, with a warning.
const Backend& select();

}  // namespace tessera::bootstrap
