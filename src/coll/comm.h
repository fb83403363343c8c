// Communicator: an ordered group of PEs with its own shared staging memory on their host (members on
// several hosts: coll/hier.h).
//
// Memory (per member, one POSIX shared-memory segment mapped by every member of the communicator):
//   Ctrl (flags, call records, flight recorder, 2 LL buffers; ~11 KiB + 128 B per member)
//   staging: kSlots slots of TESSERA_BUFFSIZE / kSlots bytes (the collective data path)
//   p2p: one TESSERA_P2P_BUFFSIZE channel per peer (send/recv)
// So a communicator of n PEs costs each PE BUFFSIZE + n * P2P_BUFFSIZE + ~13 KiB of shared memory (touched
// lazily), plus the mappings of its peers' segments (address space only).
//
// Data path ("tags"): every call of a collective runs a fixed sequence of steps; all members number the
// steps of the communicator's life alike (tag = global step number). A step writes a member's own slot
// (tag % kSlots) and reads peers' slots of the same tag. Two monotonic counters per member order this:
//   ready = highest tag whose slot this member has written (release store after the data)
//   done  = highest tag this member has finished reading (it will never read slots of that tag again)
// A member writes the slot of tag t only after every member's done >= t - kSlots (the previous user of the
// slot is finished), so up to kSlots steps are in flight and no slot is reused while being read.
// Every wait goes through sync::wait_until (spin, yield, futex, deadline); on expiry the flight recorder of
// every member is printed.
//
// Thread safety: a communicator is used by one thread at a time (like an NCCL communicator); distinct
// communicators may be used from distinct threads. Collective calls must be made by all members in the
// same order (the consistency check catches mismatches).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "coll/select/model.h"
#include "coll/types.h"

namespace tessera::pgas { struct Team; }

namespace tessera::coll {

struct Algorithm;

inline constexpr int kSlots = 4;
inline constexpr int kRecords = 64;  // flight recorder / call records kept per member
// Largest payload of the LL ("low latency") protocol (ll.cc): a member's LL buffer holds this much data.
inline constexpr size_t kLLBytes = 512;  // measured: above ~512 B oneshot is as fast or faster

// One call as every member describes it (the consistency check compares these).
struct CallDesc {
  Kind kind = Kind::kBarrier;
  DType dtype = DType::kUint8;
  Op op = Op::kSum;
  uint8_t algo = 0;
  int32_t root = -1;
  uint64_t count = 0;
  uint64_t pack() const {  // kind | dtype | op | algo | root
    return static_cast<uint64_t>(kind) | static_cast<uint64_t>(dtype) << 8 | static_cast<uint64_t>(op) << 16 |
           static_cast<uint64_t>(algo) << 24 | static_cast<uint64_t>(static_cast<uint32_t>(root)) << 32;
  }
  static CallDesc unpack(uint64_t w, uint64_t count);
};

// Flight-recorder entry (written by its member only; read by any member when a deadline expires).
struct alignas(64) Record {
  std::atomic<uint64_t> seq;      // call number (1-based); 0: unused
  std::atomic<uint64_t> desc;     // CallDesc::pack()
  std::atomic<uint64_t> count;
  std::atomic<uint64_t> tag_base; // first tag of the call
  std::atomic<uint64_t> tags;     // number of tags the call uses
  std::atomic<uint64_t> start_ns;
  std::atomic<uint64_t> end_ns;   // 0 while running
  std::atomic<uint64_t> hash;     // TESSERA_CHECK=1: hash of the result
};

struct alignas(64) Hot {
  std::atomic<uint64_t> ready;  // see above
  std::atomic<uint64_t> seq;    // current call number
  std::atomic<uint64_t> desc;   // current call's CallDesc::pack()
  std::atomic<uint64_t> count;
};
struct alignas(64) Line {
  std::atomic<uint64_t> v;
};

// Single-copy (cross-memory attach) path: what a member tells its peers about itself and its buffers.
struct alignas(64) Peer {
  std::atomic<int64_t> pid;       // process id, for process_vm_readv (set at creation)
  std::atomic<uint64_t> probe;    // address of this field in the member's own address space (probe target)
  std::atomic<uint64_t> cma_ok;   // 1: this member could read every peer's probe word (creation)
  std::atomic<uint64_t> send;     // current call's buffers (own address space), valid once the call's
  std::atomic<uint64_t> recv;     //   first step is published
  // Zero copy (algos/zcopy.cc): per call (call number % kRecords), the call's buffers as offsets + 1 in the
  // symmetric space, 0 when private. Kept per call because a member whose call needs nobody else's data
  // may start its next calls while a peer still reads this call's words (at most kSlots steps ahead).
  std::atomic<uint64_t> sym[kRecords][2];
};
// One LL buffer. A payload of up to kLLInline bytes shares the flag's cache line, so the payload and the
// word saying it is there cross between cores as one line; a larger one starts on the next line (aligned,
// so that copies and the reduction kernel do not split loads and stores across lines). flag = (call number
// mod 2^32) << 32 | ll_tag(call description), stored (release) after the payload, so a reader that sees
// its call number in the flag sees the payload of that call.
inline constexpr size_t kLLInline = 56;
struct alignas(64) LLBuf {
  std::atomic<uint64_t> flag;
  char data[kLLInline + kLLBytes];
  char* payload(size_t bytes) { return bytes <= kLLInline ? data : data + kLLInline; }
  const char* payload(size_t bytes) const { return bytes <= kLLInline ? data : data + kLLInline; }
};
static_assert(sizeof(LLBuf) % 64 == 0 && 8 + kLLInline == 64);
// Members use different pairs of LL buffers (by rank modulo kLLStagger), so that the buffers a member reads
// do not sit at the same offset within a page as the one it has just written: a load whose address matches
// a pending store's in the low 12 bits waits for that store (4K aliasing), which put the store's completion
// in front of every read of a peer's flag and payload.
inline constexpr int kLLStagger = 4;

// A member's part of one agreement (resilience.cc): its flag and the job's failure count as it read them,
// stored before the epoch (release), which names the agreement.
struct alignas(64) AgreeSlot {
  std::atomic<uint64_t> epoch;
  std::atomic<uint64_t> failures;
  std::atomic<uint64_t> flag;
};

struct Ctrl {
  Hot hot;
  Line done;
  Line model_ready;                  // rank 0: 1 once `model` is written
  ModelParams model;                 // rank 0's cost-model parameters (others copy them)
  Record rec[kRecords];
  Peer peer;
  LLBuf ll[2 * kLLStagger];          // LL buffers: member m uses pair m % kLLStagger, odd / even calls alternately
  // Resilient mode (coll/resilience.h). revoked: 1 + the rank that revoked the communicator, or 0 (every
  // member's line is written by the revoker). agree[e % 2]: this member's part of agreement e. shrink_sync:
  // the survivors' barrier while a shrink builds their communicator.
  Line revoked;
  AgreeSlot agree[2];
  Line shrink_sync;
  // Followed by p2p counters: Line sent[n] (bytes made available to peer q), Line taken[n] (bytes of
  // peer q's channel consumed by me).
};

// How a member writes its staging slots (algos/stage.cc): ordinary or streaming stores, chosen per call
// from the measured time of earlier calls of the same collective and size class with each.
inline constexpr int kStageClasses = 10;  // per-rank payload 128 KiB, 256 KiB, ... 64 MiB and more
struct StageStores {
  struct Entry {
    double cost[2] = {0, 0};  // ns per byte of a whole call: ordinary stores (0), streaming stores (1)
    uint32_t calls = 0;
  };
  Entry entry[kNumKinds][kStageClasses];
  Entry* timing = nullptr;  // the entry the running call is timed for (null: not timed)
  bool stream = false;      // the running call streams its large staging writes
  int forced = 0;           // TESSERA_STAGE_STORES: 0 auto, 1 ordinary, 2 streaming
};
// TESSERA_STAGE_STORES as StageStores::forced (a fatal error names a bad value).
int stage_stores_setting();

struct Hier;
struct NetShape;
struct Registration;

// Every member's symmetric memory as this PE maps it (the OpenSHMEM heap, then the program's globals),
// copied from the PGAS runtime when the communicator is made: the algorithms that work on symmetric buffers
// in place (algos/symmetric.cc, algos/zcopy.cc) reach a member's copy through it, by symmetric offset,
// without calling the PGAS layer. Offsets are those of pgas::watch_offset, the same on every PE.
struct SymMap {
  char* my_heap = nullptr;
  size_t heap_bytes = 0;
  char* my_data = nullptr;  // null when globals are not symmetric
  size_t data_bytes = 0;
  std::vector<char*> heap, data;  // per member: its segments in my space, null when not mapped (another host)
  // Registered buffers (coll/register.h), after the heap and the globals in the word space: region k holds
  // words [word, word + span) on every member (span: the largest member's range), member m's range mapped
  // here at at[m] (its own address for this member; null where not mapped) for len[m] bytes.
  struct Region {
    uint64_t word = 0, span = 0;
    char* mine = nullptr;  // this member's range (at[rank])
    size_t mine_len = 0;
    std::vector<char*> at;
    std::vector<size_t> len;
  };
  std::vector<Region> regions;
  // The first word after the heap and the globals: where registered regions begin.
  uint64_t first_region_word() const { return heap_bytes + data_bytes + 1; }

  // 1 + the symmetric offset of [p, p + bytes) when all of it is symmetric memory of this PE (the heap, the
  // globals, or one registered buffer), else 0.
  uint64_t word(const void* p, size_t bytes) const {
    const char* c = static_cast<const char*>(p);
    if (!c) return 0;
    const size_t b = bytes ? bytes : 1;
    const size_t h = static_cast<size_t>(c - my_heap);
    if (h < heap_bytes && b <= heap_bytes - h) return h + 1;
    const size_t d = static_cast<size_t>(c - my_data);
    if (my_data && d < data_bytes && b <= data_bytes - d) return heap_bytes + d + 1;
    return regions.empty() ? 0 : region_word(c, b);
  }
  // Member m's address of the object at symmetric word `w` (from word()), or null when m is not mapped.
  char* at(int m, uint64_t w) const {
    const size_t off = static_cast<size_t>(w - 1);
    if (off < heap_bytes) {
      char* b = heap[static_cast<size_t>(m)];
      return b ? b + off : nullptr;
    }
    if (off - heap_bytes < data_bytes) {
      char* b = data[static_cast<size_t>(m)];
      return b ? b + (off - heap_bytes) : nullptr;
    }
    return region_at(m, w);
  }

 private:
  uint64_t region_word(const char* p, size_t bytes) const;
  char* region_at(int m, uint64_t w) const;
};

struct Communicator {
  int rank = 0, size = 1;
  // Members on more than one host (coll/hier.h): collectives are the rows across hosts, composed of `hier`'s
  // local communicator and messages between hosts; the shared-memory fields below are then unused but for
  // slot_bytes, oversubscribed and model, which are the agreed ones of the local communicators. `net` is
  // what selection sees of the hosts (Shape::net).
  Hier* hier = nullptr;
  const NetShape* net = nullptr;
  std::vector<int> world;            // world PE of each rank
  std::vector<Ctrl*> ctrl;           // every member's control block (local mappings)
  std::vector<char*> staging;        // every member's staging area
  std::vector<char*> p2p;            // every member's p2p channels (n channels each)
  size_t slot_bytes = 0, p2p_bytes = 0;
  uint64_t tag = 0;                  // next tag
  uint64_t free_upto = 0;            // every member's done >= free_upto (cached; done only grows)
  uint64_t seq = 0;                  // calls made
  uint64_t ll_synced = 0;            // every member is known to have started this call (LL buffer reuse)
  ModelParams model;
  bool oversubscribed = false;       // more members than CPUs: waiters yield instead of spinning
  // Test hook TESSERA_TEST_STALL_READ (comm.cc): this member sleeps this long before it returns another
  // member's staging slot from Exec::in or its LL buffer from ll_in, holding the slot in use while the others
  // run ahead (0: never, the default; every member but the one named).
  uint32_t stall_read_us = 0;
  // Oversubscribed jobs whose members are bound to one CPU each (tessera-run's layout): wait_order lists
  // the other members, those bound to my CPU first; spin_for[m] is 1 when m is bound to another CPU. A wait
  // for a member on my CPU yields at once (it needs my CPU to make progress); a wait for one on another CPU
  // spins first (yielding would only run my CPU's other waiting members). LL calls wait in this order, so
  // that they spin only once every member of my CPU has caught up (coll_wait_for, ll.cc).
  std::vector<int> wait_order;
  std::vector<uint8_t> spin_for;
  bool all_bound = false;            // every member is bound to one CPU (Shape::bound)
  uint64_t uid = 0;
  uint64_t split_count = 0;
  // Segment bookkeeping.
  std::vector<char*> seg;            // mapping of each member's segment
  size_t seg_bytes = 0;
  bool private_seg = false;
  std::vector<char> scratch;         // private work buffer (grows, never shrinks)
  std::vector<uint64_t> p2p_sent, p2p_taken;  // local mirrors of my sent[peer] / taken[peer]
  std::vector<size_t> offsets;       // per-member offsets of v collectives (reused)
  // Selection cache: the last (kind, bytes) and its algorithm.
  Kind last_kind = Kind::kSendRecv;
  size_t last_bytes = ~size_t{0};
  bool last_symmetric = false;
  const Algorithm* last_algo = nullptr;
  std::vector<uint64_t> checked;     // bitmask: peers whose call record was checked this call
  // The members as world PEs start + rank * stride, for the hang report (sync/where.h): stride 0 when they
  // are not such a progression; INT32_MIN until the first collective computes it.
  int32_t where_stride = INT32_MIN;
  std::string name;                  // for messages: "communicator 3f2a (4 ranks)"
  const char* caller = nullptr;      // the API routine of the running call, when it names one (messages)
  bool cma = false;                  // every member can read every member's memory (process_vm_readv)
  SymMap sym;                        // every member's symmetric memory (members of this host)
  std::vector<Registration*> registrations;  // live registered buffers (coll/register.h)
  uint64_t next_region_word = 0;             // the next registration's first word (0: after heap and globals)
  std::vector<int64_t> pids;         // process id of each member
  StageStores stores;                // this member's staging stores (algos/stage.cc)
  // Set while a collective runs on this communicator (the C API's entry): a second thread calling in
  // meanwhile (say, the main thread while a comm stream's work runs) gets an error instead of corrupting
  // the call sequence. Plain loads and stores, no locked instruction: it catches overlapping calls, not
  // every race between two calls that start at the same instant.
  std::atomic<bool> in_use{false};
  // Resilient mode (coll/resilience.h), set at creation when the job runs with --on-failure continue. A call
  // that stops for a failed member or a revocation leaves the communicator `broken` (its tags and call
  // numbers no longer agree between members): later calls fail at once with `broken_why`, and only agree,
  // shrink and destroy work. `failed`: members' world PEs known failed; `failures_seen`: the job's failure
  // count when the members were last looked at.
  bool resilient = false;
  bool broken = false;
  std::string broken_why;
  std::vector<int> failed;
  uint32_t failures_seen = 0;
  uint64_t agreements = 0, shrinks = 0, shrink_syncs = 0;
  // Growing back (coll/grow.h): the world PEs that failed out of the communicators this one was shrunk from,
  // whose replacements a grow takes in; and the grows tried on it (alike on every member: the new key).
  std::vector<int> former;
  uint64_t grows = 0;
  // Each member's incarnation when the communicator was made: a member whose PE has been replaced since
  // counts as failed for it (resilience.cc: refresh_failed).
  std::vector<uint32_t> incarnations;
  // Across hosts: the communicator of which this is the host's part (set by hier_create), and the job's
  // revocation count when the records were last looked at, with what they said (1 + revoker's rank, or 0).
  Communicator* parent = nullptr;
  mutable uint32_t revocations_seen = 0;
  mutable uint64_t revoked_seen = 0;

  // P2P counters in member m's segment.
  Line* sent(int m, int peer) const;
  Line* taken(int m, int peer) const;
  char* slot(int m, uint64_t t) const { return staging[m] + (t % kSlots) * slot_bytes; }
  LLBuf& ll(int m, uint64_t call) const { return ctrl[m]->ll[(call & 1) + 2 * static_cast<uint64_t>(m % kLLStagger)]; }
  char* scratch_bytes(size_t n);
};

// Around each call (algos/stage.cc): chooses the call's kind of staging store (StageStores::stream) and
// times the call.
// Calls below kStageTimedMin per rank are not timed and use ordinary stores (unless forced): that test is
// inline, so the smallest calls make no call for it.
inline constexpr size_t kStageTimedMin = size_t{128} << 10;
uint64_t stage_call_begin_timed(Communicator& c, Kind kind, size_t bytes_per_rank);
void stage_call_end_timed(Communicator& c, uint64_t t0, size_t bytes_per_rank);
inline uint64_t stage_call_begin(Communicator& c, Kind kind, size_t bytes_per_rank) {
  if (c.stores.forced || bytes_per_rank < kStageTimedMin) {
    c.stores.timing = nullptr;
    c.stores.stream = c.stores.forced == 2;
    return 0;
  }
  return stage_call_begin_timed(c, kind, bytes_per_rank);
}
inline void stage_call_end(Communicator& c, uint64_t t0, size_t bytes_per_rank) {
  if (c.stores.timing) stage_call_end_timed(c, t0, bytes_per_rank);
}

// Creation and destruction: collective over the members (and, for split, over the parent).
Result<Communicator*> comm_create_team(pgas::Team* team);
// The members {start + i*stride : i < size} in world numbering (an OpenSHMEM active set); `sync` is a
// barrier over them, called twice.
Result<Communicator*> comm_create_set(int start, int stride, int size, const std::function<void()>& sync);
// The members `pes` (world PE numbers, in rank order), collective over them alone; `key` is the same on
// every member; `sync` is a barrier over the members, called twice (coll.hpp: Comm::from_pes).
Result<Communicator*> comm_create_pes(std::vector<int> pes, uint64_t key, const std::function<void()>& sync);
Result<Communicator*> comm_split(Communicator* parent, int color, int key);
void comm_destroy(Communicator* c);
// Frees this member's part of a communicator without a barrier: peers keep their own mappings of its
// segment, so nothing they read goes away; later calls of theirs wait for this member until their deadline.
// For owners that cannot make destruction collective (Comm::release), and for tests after a mismatch.
void comm_abandon(Communicator* c);

}  // namespace tessera::coll
