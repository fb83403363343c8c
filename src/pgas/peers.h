// Peers and their transports: the choice made once at init, and the data path to a peer without a mapping.
//
// init chooses every peer's transport by walking the transport table (transport/transport.h) with the host
// identities of the bootstrap exchange, and registers the peer's memory with it. A peer whose transport
// maps its memory (self, shm) has bases[pe] set: remote() returns an address and the inline paths of
// rma.h/amo.h/p2p.h load and store, never calling the record. For a peer without a mapping remote()
// returns null and those paths call the routed_* functions here, which call the peer's record with the
// symmetric offset (watch_offset). They are out of line: the shared-memory case keeps one predictable
// branch on the base it loads anyway.
// Thread safety: the table is written only by init, finalize and set_transport_for_test (no concurrent
// operations); everything else reads it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace tessera::pgas {

struct Runtime;

// Transports without a mapping that some peer uses, in table order: fence and quiet call theirs.
// g_routed_count is 0 on a single host, so fence/quiet test one word.
inline constexpr int kMaxRouted = 4;
extern int g_routed_count;
extern const transport::Transport* g_routed[kMaxRouted];

// Host identity of PE `pe` (this process), as exchanged at init: TESSERA_HOST_ID, else the host that lists it
// in the rank table (base/rank_table.h), else the host name and the boot id.
std::string host_identity(int pe);
// Identity of the machine this process runs on: the kernel's boot id (the host name when there is none).
// PEs with equal identities share the machine's CPUs, whatever their host identities.
std::string machine_identity();
// Opens every transport of the table (collective: bootstrap's allgather; null for a job of one PE), then
// chooses the transport of every PE given their host identities and maps their memory; on error, names the
// peer, its host and the transports tried.
// A replacement PE (resilient.h) passes `sources`: per PE, the process and descriptors its segments are
// mapped through, or pid 0 for a PE that failed with no process in its place (transport::gone()).
struct PeerSource {
  int pid = 0;
  int heap_fd = -1;
  int data_fd = -1;
};
Status connect_peers(Runtime& r, const std::string* hosts, const bootstrap::Backend* boot,
                     const PeerSource* sources = nullptr);
// A survivor's view of `pe` once a replacement has taken its place: maps the replacement's segments through
// `from`. The old mapping stays until finalize (another thread may still hold an address in it).
Status remap_peer(Runtime& r, int pe, const PeerSource& from);
void disconnect_peers(Runtime& r);
// "self: PE 0; shm: PEs 1-3" for the log.
std::string describe_peers(const Runtime& r);

// Tests only (tests/pe/pgas_transport_test.cc): from now on this PE reaches `pe` through `t`'s functions,
// as it would a peer on another host, while the mapping chosen at init stays registered (a test transport
// may move the data through it: mapping_for_test). t == nullptr restores the transport chosen at init.
// No other thread may access `pe` meanwhile, and nothing collective may run while a peer is rerouted
// (collectives and team barriers load and store through the mappings).
void set_transport_for_test(int pe, const transport::Transport* t);
// The load/store addresses of pe's heap and data segments chosen at init (null for a peer without one).
transport::PeerMemory mapping_for_test(int pe);

// The data path through a peer's record. `sym` is this PE's address of the symmetric object, already
// checked by remote().
void routed_put(const char* routine, const void* dest, const void* src, size_t bytes, int pe);
// The non-blocking form: `src` is read until the next fence or quiet where the transport allows it.
void routed_put_nbi(const char* routine, const void* dest, const void* src, size_t bytes, int pe);
void routed_get(const char* routine, void* dest, const void* src, size_t bytes, int pe);
uint64_t routed_atomic(const char* routine, const void* sym, size_t size, transport::AtomicOp op, uint64_t value,
                       uint64_t cond, int pe);
void routed_put_signal(const char* routine, const void* dest, const void* src, size_t bytes, const uint64_t* sig,
                       uint64_t signal, int sig_op, int pe);
void routed_fence();
void routed_quiet();
// Advances every transport without a mapping in use (sync::WaitContext::progress).
void routed_progress();
// Sessions (shmem_session_start/stop): each routed transport that batches (Transport::batch) opens or
// closes one; closing the last sends what it holds.
void routed_session(bool start);

}  // namespace tessera::pgas
