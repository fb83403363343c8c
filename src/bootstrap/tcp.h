// The TCP rendezvous (TESSERA_BOOTSTRAP=tcp://HOST:PORT): for jobs whose processes are started by the
// user's own launcher, possibly across hosts, as NCCL's and NVSHMEM's bootstraps serve. Rank 0 listens on
// HOST:PORT, every other rank connects to it and proves it knows the job's secret (tcp_wire.h); exchanges
// and aborts go through rank 0 (a star).
//
// One Endpoint per PE, made by the backend's init and ended by its finalize. Its connection stays open for
// the whole job, watched by one thread per PE that blocks in poll() (no CPU while nothing happens):
//  - rank 0's thread serves the star: it relays allgathers and aborts, acknowledges goodbyes, and refuses
//    late connections while every PE runs (after the first goodbye it leaves them in the backlog: see
//    take_listen_socket). A PE whose connection closes without a goodbye died: rank 0 prints one line naming
//    it, sends kAbort to every other PE, then calls the abort hook (bootstrap.h).
//  - another rank's thread owns every read from its connection: it hands allgather replies to the caller,
//    calls the abort hook on kAbort, and on a connection to rank 0 that closes without the goodbye
//    acknowledgement prints one line naming PE 0 and calls the abort hook.
// After the hook, a PE's endpoint fails every later exchange (Code::kAborted) and says nothing more.
//
// Thread safety: allgather from one thread at a time (the runtime's init and finalize); abort() from any
// thread, at any time, concurrently with the others; finalize once, after the last allgather.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "bootstrap/tcp_wire.h"

namespace tessera::bootstrap::tcp {

struct Config {
  int rank = 0;
  int size = 1;
  std::string secret;  // hex text, check_secret()ed
  Address address;     // rank 0's
  uint64_t start_deadline_ns = 0;  // now_ns() by which every rank must have joined
  uint64_t timeout_ns = 0;         // how long any later wait (allgather reply, goodbye) may take
  std::string job_id;  // rank 0 welcomes with this id when set (valid_job_id), else with a random one
  // This process joined a job before and finalized (an init after the last finalize): rank 0 may be late to
  // serve the second join, so a rank waits for its challenge until start_deadline_ns, not one step's time.
  bool rejoin = false;
  // Resilient mode (tessera-run --hosts --on-failure continue: TESSERA_RESILIENT=1 from the agent): a PE
  // whose connection is lost has failed, which the launcher reports; the job goes on, and rank 0's loss too.
  bool resilient = false;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Every PE contributes `bytes`; `all` receives size * bytes, in rank order.
  virtual Status allgather(const void* mine, void* all, size_t bytes) = 0;
  // Tells the other PEs that the job ends with `code`, this PE being the cause. Returns once the message is
  // handed to the kernel (or could not be): the caller is about to exit.
  virtual void abort(int code) = 0;
  // A clean end: goodbye (rank 0: waits for every PE's goodbye), then joins the thread and closes.
  // Destroying an endpoint without finalize closes its connections as a crash would.
  virtual void finalize() = 0;
  // In a child forked after init: closes this process's copies of the endpoint's descriptors (without
  // locks, threads or messages), so that a child outliving its parent cannot hide the parent's death from
  // rank 0 by holding its connection open. The endpoint is not usable afterwards; it is never destroyed.
  virtual void close_in_child() = 0;
  // Rank 0, after finalize: its listening socket, handed over for the next init in this process (-1: none,
  // or not rank 0). Connections that arrived after the first goodbye wait in its backlog, unanswered: they
  // are the second joins of PEs that initialize again, and the next init's star accepts them.
  virtual int take_listen_socket() { return -1; }
  const std::string& job_id() const { return job_id_; }

 protected:
  std::string job_id_;
};

// Rank 0: serves on `listen_fd` (taken over, closed by the endpoint) until every rank has joined, sends
// the welcome with a fresh job id, and starts the star's thread.
Result<std::unique_ptr<Endpoint>> start_rank0(const Config& cfg, int listen_fd);
// Any other rank: connects to cfg.address, authenticates, waits for the welcome, starts its thread.
Result<std::unique_ptr<Endpoint>> start_peer(const Config& cfg);

// tessera_bootstrap_uid (shmem_extra.h): a listening socket on `host` (a port the kernel chooses) kept
// open in this process, and the "tcp://HOST:PORT/SECRET" string for TESSERA_BOOTSTRAP. A later call
// replaces (and closes) the earlier socket.
Result<std::string> make_unique_id(const std::string& host);
// The listening socket make_unique_id left for `a` (same port and secret) in this process, handed over
// (-1 when there is none); `made_here` tells whether this process made any id with that secret.
int take_unique_id_socket(const Address& a, bool* made_here);

}  // namespace tessera::bootstrap::tcp
