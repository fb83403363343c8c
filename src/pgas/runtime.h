// The PGAS runtime of one PE: who we are, where every PE's symmetric memory is mapped, the job's control
// segment. One instance per process, created by init() and destroyed by finalize().
//
// Addressing: every PE on the host maps every peer's heap segment at init (through the peer's transport,
// peers.h), so the address of symmetric object `sym` on PE `pe` is bases[pe] + (sym - bases[my_pe]). A peer
// whose transport has no mapping has a null base: remote() returns null for it and the data path goes
// through the transport's functions. The program's global and static variables
// are symmetric too (OpenSHMEM): their pages are moved into a shared segment at init (see data_segment.h)
// and translated the same way. remote() checks the PE and the address and ends the job with a message
// naming the value and the limit when either is out of range.
//
// Thread safety: after init, every accessor here is safe from any thread (read-only state).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/status.h"
#include "sync/fail.h"
#include "sync/wait.h"
#include "transport/transport.h"

namespace tessera::pgas {

// Job-wide control segment (created by tessera-run, mapped by every PE and the launcher):
//   header | PeWaitWords[n_pes] | PeState[n_pes] (state word, PeWaitHist) | PeWhere[n_pes]
// The where-areas (sync/where.h) come last and are whole cache lines: a PE's recording never writes a line
// that holds another PE's wait words.
struct JobControl {
  static constexpr uint64_t kMagic = 0x54455353'43544c31ull;  // "TESSCTL1"
  uint64_t magic;
  uint32_t n_pes;
  // tessera-run's pid and pid namespace (0 under other launchers): a later launcher of the same user removes
  // what a launcher killed by SIGKILL left in /dev/shm (tools/run/proc.h).
  int32_t launcher_pid;
  uint64_t launcher_pidns;
  alignas(kCacheLine) std::atomic<uint32_t> abort;  // 0, or failed PE + 1
  std::atomic<uint32_t> exit_kind;                  // why: kExitFatal or kExitGlobal
  std::atomic<int32_t> exit_code;                   // status the job ends with
  // A sync::SharedMode, set by tessera-run (tools/run/placement.h): whether processes outside the job use its
  // CPUs, and whether the PEs then stay bound; waits then never yield (sync/wait.h).
  std::atomic<uint32_t> cpus_shared;
  // 0, or the first PE whose wait passed its deadline (TESSERA_TIMEOUT) + 1: the launcher then prints the
  // hang report (tools/run/hang_report.h).
  std::atomic<uint32_t> deadline_pe;
  // Resilient mode (tessera-run --on-failure continue, docs/resilience.md): 1 when a PE's failure leaves
  // the others running. `failures` counts the PEs the launcher has marked kFailed; it only grows, and a PE
  // marked k-th has fail_index k - 1, stored before its state and before the count (so a reader that loads
  // the count, acquire, sees every PE with a smaller index as kFailed).
  std::atomic<uint32_t> resilient;
  std::atomic<uint32_t> failures;
  // Resilient mode: revocations of communicators spanning hosts recorded so far (release, after the record:
  // sync::FailRecords::revoke), so that a watch looks at the records only when one was added.
  std::atomic<uint32_t> revocations;
  char pad1[kCacheLine - 32];

  enum ExitKind : uint32_t { kExitNone = 0, kExitFatal = 1, kExitGlobal = 2 };

  // kFailed: the PE ended (died, or left without shmem_finalize) while the job went on (resilient mode).
  // kRestarting: tessera-run --restarts is starting a replacement under a failed PE's number; kJoining: the
  // replacement has published its segments and waits to be taken into a communicator (tesseraCommGrow). Both
  // still count as failed.
  enum State : uint32_t {
    kNotStarted = 0, kInitialized = 1, kFinalized = 2, kFailed = 3, kRestarting = 4, kJoining = 5
  };
  static size_t bytes_for(int n) {
    const size_t per_pe = sizeof(sync::PeWaitWords) + kCacheLine + sizeof(sync::PeWhere) + sizeof(sync::FailRecords);
    return sizeof(JobControl) + per_pe * static_cast<size_t>(n) + GrowBoard::bytes_for(n);
  }
  sync::PeWaitWords* pe_words() { return reinterpret_cast<sync::PeWaitWords*>(this + 1); }
  std::atomic<uint32_t>* state(int pe) {
    char* base = reinterpret_cast<char*>(pe_words() + n_pes);
    return reinterpret_cast<std::atomic<uint32_t>*>(base + static_cast<size_t>(pe) * kCacheLine);
  }
  // The rest of a PE's state line: how its waits ended while the CPUs were shared (sync/wait.h).
  sync::PeWaitHist* wait_hist(int pe) {
    static_assert(sizeof(std::atomic<uint32_t>) + sizeof(sync::PeWaitHist) <= kCacheLine);
    return reinterpret_cast<sync::PeWaitHist*>(reinterpret_cast<char*>(state(pe)) + sizeof(std::atomic<uint32_t>));
  }
  // Resilient mode: the launcher has marked `pe` failed (acquire: its fail_index is then readable), and no
  // replacement has been taken into a communicator since.
  bool failed(int pe) {
    const uint32_t s = state(pe)->load(std::memory_order_acquire);
    return s == kFailed || s == kRestarting || s == kJoining;
  }
  // The order in which the launcher marked `pe` failed (valid once its state is kFailed).
  std::atomic<uint32_t>* fail_index(int pe) {
    static_assert(2 * sizeof(std::atomic<uint32_t>) + sizeof(sync::PeWaitHist) <= kCacheLine);
    return reinterpret_cast<std::atomic<uint32_t>*>(reinterpret_cast<char*>(wait_hist(pe) + 1));
  }
  // How many times `pe` has entered shmem_finalize in resilient mode (its barrier skips failed PEs).
  std::atomic<uint32_t>* leaves(int pe) {
    static_assert(3 * sizeof(std::atomic<uint32_t>) + sizeof(sync::PeWaitHist) <= kCacheLine);
    return fail_index(pe) + 1;
  }
  // Growing back (resilient mode with tessera-run --restarts; coll/grow.cc): the replacement the launcher
  // started last for `pe` (0: the original process), stored before it is started; and the one that has
  // since published its segments and waits to join (JoinWords, written by that process).
  std::atomic<uint32_t>* incarnation(int pe) { return leaves(pe) + 1; }
  struct JoinWords {
    std::atomic<uint32_t> joined;   // the incarnation whose words these are (release, after the rest)
    std::atomic<int32_t> pid;       // the process, and the descriptors it holds its segments open by
    std::atomic<int32_t> heap_fd;
    std::atomic<int32_t> data_fd;   // -1 without a data segment
  };
  JoinWords* join(int pe) {
    static_assert(4 * sizeof(std::atomic<uint32_t>) + sizeof(sync::PeWaitHist) + sizeof(JoinWords) <= kCacheLine);
    return reinterpret_cast<JoinWords*>(incarnation(pe) + 1);
  }
  // The last meeting of a grow that `pe` reached (coll/grow.cc: 4 * the board's seq + the meeting). Written by
  // that PE only; a mark, once posted, stays (also when the PE dies), so a meeting passes for all or for none.
  std::atomic<uint32_t>* grow_mark(int pe) {
    static_assert(5 * sizeof(std::atomic<uint32_t>) + sizeof(sync::PeWaitHist) + sizeof(JoinWords) <= kCacheLine);
    return reinterpret_cast<std::atomic<uint32_t>*>(join(pe) + 1);
  }
  sync::PeWhere* where(int pe) {
    char* base = reinterpret_cast<char*>(pe_words() + n_pes) + static_cast<size_t>(n_pes) * kCacheLine;
    return reinterpret_cast<sync::PeWhere*>(base) + pe;
  }
  sync::FailRecords* records(int pe) { return reinterpret_cast<sync::FailRecords*>(where(n_pes)) + pe; }

  // One grow at a time in the job (coll/grow.cc): its leader owns the board, writes the members and the
  // communicator's key, then bumps `seq`; the members meet on their grow marks.
  struct GrowBoard {
    std::atomic<uint32_t> owner;    // 0, or the leader's PE + 1
    std::atomic<uint32_t> seq;      // odd while a grow's members are published
    std::atomic<uint32_t> done;     // members past the grow's last meeting (the leader closes the board after)
    uint64_t key;                   // the new communicator's key (coll::comm_create_pes)
    uint64_t heap_print;            // the leader's symmetric allocations (pgas::heap_fingerprint)
    uint32_t n;                     // members
    std::atomic<uint32_t> refused;  // 0, or 1 + a member that cannot go on (its own error says why)
    std::atomic<uint32_t> seen;     // members that have read the board (the leader closes it after)
    uint32_t pad;
    // Two bitmaps of (n_pes + 63) / 64 words each: bit pe set for each member, then for each member that
    // joins (a replacement: it takes only a grow that lists it here).
    std::atomic<uint64_t> members[1];
    static size_t bytes_for(int n) {
      return (sizeof(GrowBoard) + 2 * ((static_cast<size_t>(n) + 63) / 64) * 8 + kCacheLine - 1) / kCacheLine *
             kCacheLine;
    }
  };
  GrowBoard* grow_board() { return reinterpret_cast<GrowBoard*>(records(n_pes)); }
};

struct Runtime {
  int my_pe = 0;
  int n_pes = 0;                        // 0 until init
  size_t seg_size = 0;                  // bytes of every PE's heap segment, reserved area included
  size_t heap_size = 0;                 // bytes usable by shmem_malloc (seg_size - reserved)
  std::vector<char*> bases;             // bases[pe]: local mapping of pe's heap segment, or null
  std::vector<const transport::Transport*> transports;  // transports[pe]: memory path, chosen once at init (peers.h)
  std::vector<const transport::Transport*> messages;    // messages[pe]: message path (null within a host; peers.h)
  std::vector<int> host_of;             // host of each PE, numbered 0.. in order of each host's lowest PE
  int n_hosts = 1;
  // PEs of the job that run on this PE's machine (its own kernel: machine_identity()), itself included. They
  // share its CPUs, also when they count as other hosts (network namespaces or containers of one machine):
  // "more PEs than CPUs" compares this with the CPUs, not the job's size.
  int machine_pes = 1;
  char* my_base = nullptr;
  // Symmetric data segment (globals/statics of the executable), or null when not shared.
  char* data_base = nullptr;
  size_t data_size = 0;
  std::vector<char*> data_bases;
  JobControl* control = nullptr;
  std::string job_id;
  int thread_level = 0;
  std::atomic<bool> initialized{false};
  std::atomic<bool> ever_initialized{false};  // stays true after finalize
  int init_count = 0;
};

namespace detail {
extern Runtime g_rt;
}
// The process's runtime; valid between init() and finalize(). Inline: every put and get reads it.
inline Runtime& rt() { return detail::g_rt; }
inline bool is_initialized() { return rt().initialized.load(std::memory_order_relaxed); }

// Collective over all PEs of the job. A second init counts a reference and does nothing else.
Status init(int requested_thread_level = 0);
void finalize();

// Ends every PE of the job (sets the abort word, wakes waiters) and exits this process with `code`.
[[noreturn]] void global_exit(int code);

[[noreturn]] void fail_not_initialized(const char* routine);
[[noreturn]] void fail_bad_pe(const char* routine, int pe, int n_pes);
[[noreturn]] void fail_bad_addr(const char* routine, const void* addr, size_t bytes);
[[noreturn]] void fail_null(const char* routine, const char* what, size_t bytes);
[[noreturn]] void fail_bad_signal_op(const char* routine, int sig_op);

// Cold path of remote(): the symmetric data segment, else a fatal error.
char* remote_slow(const char* routine, const void* sym, size_t bytes, int pe);

// Symmetric address -> address of the same object on `pe` (local mapping). Checked. Null when `pe` has no
// mapping (its transport moves the data: peers.h), which callers that load/store must handle.
// Always inlined: it is most of a single-element put/get, and its checks fold into the caller's.
[[gnu::always_inline]] inline char* remote(const char* routine, const void* sym, size_t bytes, int pe) {
  Runtime& r = rt();
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(r.n_pes)) [[unlikely]]
    fail_bad_pe(routine, pe, r.n_pes);
  size_t off = static_cast<size_t>(static_cast<const char*>(sym) - r.my_base);
  if (off >= r.seg_size || bytes > r.seg_size - off) [[unlikely]]
    return remote_slow(routine, sym, bytes, pe);
  char* base = r.bases[static_cast<size_t>(pe)];
  if (!base) [[unlikely]] return nullptr;
  return base + off;
}

// True if [p, p+bytes) is symmetric memory of this PE (heap or data segment).
bool is_symmetric(const void* p, size_t bytes = 1);
// Offset of symmetric `sym` in the space waiters watch (sync::Watch): the heap segment, then the data
// segment after it. The same on every PE.
inline uint64_t watch_offset(const void* sym) {
  Runtime& r = rt();
  size_t off = static_cast<size_t>(static_cast<const char*>(sym) - r.my_base);
  if (off < r.seg_size) return off;
  return static_cast<uint64_t>(static_cast<const char*>(sym) - r.data_base) + r.seg_size;
}
inline sync::Watch watch_of(const void* sym, size_t bytes) {
  uint64_t o = watch_offset(sym);
  return {o, o + bytes};
}

inline size_t heap_offset(const void* sym) {
  return static_cast<size_t>(static_cast<const char*>(sym) - rt().my_base);
}

}  // namespace tessera::pgas
