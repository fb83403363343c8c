// Exec: one collective call on a communicator, as a sequence of steps (see comm.h for tags and slots).
//
//   Exec ex(comm, desc);          // opens the call: records it, publishes its description
//   ex.step(t);                   // steps < t are finished: this member reads no slot of them again
//   char* o = ex.out(t);          // my slot of step t, once every member has released its previous use
//   ... write o ...; ex.publish(t);
//   const char* i = ex.in(m, t);  // member m's slot of step t, once m has published it
//   ex.end(nsteps);               // closes the call: every member must pass the same nsteps
//
// Calls whose payload fits kLLBytes may use the LL protocol instead of steps (ll.cc; no tags, no slots):
//   char* o = ex.ll_out(bytes);        // where my payload of this call goes (buffer of its call parity)
//   ... write o ...; ex.ll_publish();  // or ex.ll_put(src, bytes) for the three
//   const char* i = ex.ll_in(m, bytes);  // member m's payload of this call, once m has published it
// A call that reads every member's LL buffer has proven that every member started it, so the next LL call
// may rewrite the other buffer without checking anything (reuse rule in ll.cc).
//
// in() also runs the cheap consistency check: the first time a call waits for member m, m's description
// of the same call (its n-th collective on this communicator) must equal ours, else the job ends with a
// message naming the collective, both ranks and the differing values. Waits print every member's flight
// recorder when TESSERA_TIMEOUT expires. Not thread-safe (one call at a time per communicator).
#pragma once
#include <cstdint>
#include <string>

#include "base/cpu.h"
#include "coll/algo.h"
#include "coll/comm.h"

namespace tessera::coll {

// Sleeps `us` microseconds: the test hook TESSERA_TEST_STALL_READ (Communicator::stall_read_us), out of line.
[[gnu::noinline, gnu::cold]] void test_stall(uint32_t us);

class Exec {
 public:
  // Opens call number comm.seq + 1. A stepped call records itself (flight recorder, hot line) at once,
  // with its start time. An LL call (stepped false) records itself right after storing its flag
  // (ll_publish), so that the flag is not queued behind a dozen stores to two other lines, which delayed
  // its arrival at the peer (docs/journal.md, "LL protocol"), or when it first waits, or in end();
  // its start time is written when it first has to wait (stamp_wait), or never.
  // The description comes by value, in two registers: built field by field and copied through memory, it
  // stalled the copy's 16-byte load on store forwarding.
  Exec(Communicator& c, CallDesc d, bool stepped = true);
  Exec(const Exec&) = delete;
  Exec& operator=(const Exec&) = delete;

  Communicator& comm() { return c_; }
  int rank() const { return c_.rank; }
  int size() const { return c_.size; }
  size_t slot_bytes() const { return c_.slot_bytes; }
  uint64_t tag(uint64_t step) const { return base_ + step; }

  void step(uint64_t t) {
    if (t != 0) step_done(t - 1);
  }
  char* out(uint64_t t);
  void publish(uint64_t t);
  const char* in(int m, uint64_t t);
  void end(uint64_t nsteps, uint64_t result_hash = 0);  // inline (engine-inl.h), as the LL calls below

  // Hands the call on after its first k steps: steps are numbered from 0 again, so one run() can finish
  // with another (a prologue that chose the path, then the chosen algorithm). end() then takes the
  // count of the renumbered steps.
  void advance(uint64_t k);

  // Blocks until every member's done >= tag(t) (all finished step t); used by barrier-like endings.
  void wait_done(int m, uint64_t t);

  char* ll_out(size_t bytes);
  void ll_publish();
  void ll_put(const void* src, size_t bytes);
  const char* ll_in(int m, size_t bytes);
  // Every peer's payload of this call, waited for in the communicator's wait order (comm.h): in[m] for
  // each peer m (in[rank()] is left alone); bytes(m) is the size member m publishes.
  template <typename Ptr, typename Bytes>
  void ll_in_all(Ptr* in, Bytes&& bytes);

 private:
  void wait_free(uint64_t t);
  void check_peer(int m);
  void step_done(uint64_t t);      // out-of-line part of step(): steps <= t are finished
  void check_neighbour(int nb);    // end(): the neighbour's call, when this call never waited for it

  Communicator& c_;
  CallDesc desc_;
  uint64_t base_;
  uint64_t seq_;
  Record* rec_;
  uint32_t ll_tag_;  // ll_tag(desc_), computed once per call
  int ll_read_ = 0;  // peers whose LL buffer this call has read
  size_t ll_bytes_ = 0;  // my LL payload in this call
  void ll_all_read();    // every peer's LL buffer of this call was read (inline: takes the next buffer)
  bool recorded_ = false;
  // Writes this call's flight-recorder entry and the hot line (its description, for peers' checks).
  void record(uint64_t start_ns);
  // Out-of-line slow paths of the LL protocol (the fast path stays a few instructions).
  void ll_sync_reuse();
  template <bool kLines>
  uint64_t ll_wait(int m, uint64_t w, size_t bytes);
  [[noreturn]] void ll_mismatch(int m, uint64_t w);
  // An LL call that has to wait records when it started waiting, as its start (the flight recorder's
  // "RUNNING for").
  void stamp_wait() {
    if (!recorded_) record(0);
    if (rec_->start_ns.load(std::memory_order_relaxed) == 0)
      rec_->start_ns.store(fast_now_ns(), std::memory_order_relaxed);
  }
};

// The 32-bit form of a call description carried in LL flags: exact for LL calls (count < 2^11, a root
// below 511: LL algorithms support up to 256 members).
static_assert(kLLBytes < (size_t{1} << 11), "ll_tag() keeps 11 bits of count");
static_assert(kNumKinds <= 32 && kNumDTypes <= 16 && kNumOps <= 8, "ll_tag() field widths");
inline uint32_t ll_tag(const CallDesc& d) {
  return static_cast<uint32_t>(d.kind) << 27 | static_cast<uint32_t>(d.dtype) << 23 |
         static_cast<uint32_t>(d.op) << 20 | (static_cast<uint32_t>(d.root + 1) & 0x1ff) << 11 |
         static_cast<uint32_t>(d.count & 0x7ff);
}

// The text printed when a wait expires: what this member waited for and every member's flight recorder.
std::string flight_recorder(const Communicator& c, const std::string& waiting_for);

// Tests only: a consistency mismatch throws std::runtime_error (with the message) instead of ending the
// job. The communicator is unusable afterwards (see comm_abandon).
void set_mismatch_throws(bool on);
// Ends the job with a mismatch found inside an algorithm (the counts of the v variants), or throws under
// set_mismatch_throws.
[[noreturn]] void mismatch_fatal(const std::string& msg);

// Waits with the layer's policy: sync::wait_until, and when oversubscribed the predicate yields the CPU.
template <typename Done, typename Describe>
void coll_wait(const Communicator& c, Done&& done, Describe&& describe);

}  // namespace tessera::coll

#include "coll/engine-inl.h"
