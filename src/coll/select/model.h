// The alpha-beta-gamma cost model of the collective layer.
//   alpha: seconds per synchronisation step (publish a flag, a peer sees it) -- per step of an algorithm
//   beta:  seconds per byte copied through shared memory (read + write)
//   gamma: seconds per byte of one reduction input (read, combine)
//   cma_beta: seconds per byte copied from another process by the kernel (process_vm_readv: syscall, page
//          pinning, kernel copy); on most hosts well above beta, so the single-copy algorithms win only
//          where the kernel copies about as fast as user space
//   beta_mem, gamma_mem: beta and gamma once a member's buffers outgrow cache_bytes (the memory's rate). The
//          engine's rows price their copies in cache, where their staging stays, and the choice among them
//          holds since their copies move alike; the rows across hosts add local phases to transfers between
//          hosts, where the absolute figure counts, and add to a local phase whose member's own buffers
//          outgrow the cache the difference beta_mem makes to those bytes (hier/rows.cc, on_host)
//   cma_beta_mem, cache_bytes: the kernel copy's rate once a member's buffers (its input and output) outgrow
//          cache_bytes, the largest footprint a repeated copy still finds in cache. The kernel copy slows
//          down far more than the staged copies once its data leaves the cache (those keep their staging
//          in L2); priced at its in-cache rate, the single-copy alltoall was chosen for 64 MiB where the
//          staged one is faster (docs/coll.md, single copy pricing)
// Parameters come from, in order: TESSERA_COLL_MODEL=<file> ("alpha=... beta=... gamma=..." in seconds),
// a per-host cache (~/.cache/tessera/coll-model-v3-<host>.txt, or $XDG_CACHE_HOME), or a quick measurement
// (docs/journal.md has its cost) that is then written to the cache. Rank 0 of a communicator decides and
// publishes its parameters in shared memory so every member selects the same algorithm.
#pragma once
#include <string>

namespace tessera::coll {

struct ModelParams {
  double alpha = 0.4e-6;
  double beta = 1.0 / 8e9;
  double gamma = 1.0 / 10e9;
  double oversub_alpha = 4e-6;  // alpha when members outnumber CPUs (a wait may need a context switch)
  double cma_beta = 3.0 / 8e9;  // seconds per byte copied from a peer by process_vm_readv (coll/single_copy.h)
  double cma_beta_mem = 3.0 / 8e9;  // the same once a member's buffers exceed cache_bytes
  double cache_bytes = 1e18;        // footprint (bytes) a repeated copy still finds in cache
  double beta_mem = 1.0 / 8e9;      // beta beyond cache_bytes
  double gamma_mem = 1.0 / 10e9;    // gamma beyond cache_bytes
  char source[48] = "default";  // (written to the per-host cache by model_file.h's format_model)  // "file", "cache", "measured", "default"
};

// The link between hosts, for the rows of a communicator that spans hosts (coll/hier.h):
//   alpha      seconds per message between hosts, one way (latency)
//   stream_bw  bytes per second one stream carries in each direction while the peer sends back at once
//              (a ring step, an exchange)
//   oneway_bw  bytes per second one stream carries with no traffic the other way (a tree's or a
//              broadcast's transfer). Where the hosts' CPUs copy the bytes (TCP), the sending and receiving
//              of both directions share them, and one way alone ran near twice as fast (docs/hosts.md)
//   host_bw    bytes per second all streams leaving one host carry together (the rails at once)
//   burst_bw   bytes per second of a transfer's first kBurstBytes, which the sockets' buffers take without
//              waiting for the receiver: on namespace hosts 1 MiB both ways ran near twice the 16 MiB rate;
//              stream_bw and oneway_bw are the rates beyond them (transfer_seconds, select/link.h)
//   wake       seconds a transfer of kWakeBytes or more pays beyond the latency and its bytes (less in
//              proportion below): its later segments find the receiver's wait gone to sleep or yielded, and
//              each wake-up costs a scheduler's round (docs/hosts.md, "The model's wake-up")
// Where they come from: select/link.h.
struct LinkParams {
  double alpha = 25e-6;
  double stream_bw = 1e9;
  double oneway_bw = 1e9;
  double host_bw = 1e9;
  double burst_bw = 1e9;
  double wake = 0;
  static constexpr double kBurstBytes = 1 << 20;
  static constexpr double kWakeBytes = 64 << 10;
  char source[32] = "default";
};

// Rank 0's parameters (loaded or measured); cached per process.
ModelParams load_model();
std::string describe(const ModelParams& m);

}  // namespace tessera::coll
