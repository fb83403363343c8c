// Inline part of engine.h: the calls every collective makes (open, end) and the LL protocol's fast path
// (ll.cc has its slow paths and the protocol's rules). Inline because the smallest calls are a cache-line
// exchange plus this code: at 2 ranks everything between seeing a peer's flag and storing the next call's
// flag adds to every call's latency.
#pragma once
#include <algorithm>
#include <cstring>

#include "base/cpu.h"
#include "base/memcopy.h"
#include "sync/wait.h"

namespace tessera::coll {

template <typename Done, typename Describe>
void coll_wait(const Communicator& c, Done&& done, Describe&& describe) {
  if (done()) return;
  if (c.oversubscribed) {
    // More members than CPUs: the member we wait for may need this CPU, so give it away at once.
    sync::wait_yielding(done, describe);
  } else {
    sync::wait_until(done, describe);
  }
}

// As coll_wait, for a wait on member m: when oversubscribed, a member bound to another CPU is waited for
// by spinning first (Communicator::spin_for), one on my CPU by yielding at once.
template <typename Done, typename Describe>
void coll_wait_for(const Communicator& c, int m, Done&& done, Describe&& describe) {
  if (c.spin_for[static_cast<size_t>(m)]) {
    sync::wait_until(done, describe);
  } else {
    coll_wait(c, done, describe);
  }
}

inline Exec::Exec(Communicator& c, CallDesc d, bool stepped) : c_(c), desc_(d), ll_tag_(ll_tag(d)) {
  seq_ = ++c.seq;
  base_ = c.tag;
  rec_ = &c.ctrl[c.rank]->rec[seq_ % kRecords];
  if (stepped) record(fast_now_ns());
  if (c.checked.size() == 1) c.checked[0] = 0;  // up to 64 members: one word, no memset call
  else std::fill(c.checked.begin(), c.checked.end(), 0);
}

inline void Exec::end(uint64_t nsteps, uint64_t result_hash) {
  if (!recorded_) [[unlikely]] record(0);  // an LL call that published nothing (count 0)
  step(nsteps);
  // A member that waited for nobody in this call (a root that only publishes) still compares its call
  // with its right neighbour's, once the neighbour has started it.
  const int nb = c_.rank + 1 == c_.size ? 0 : c_.rank + 1;
  if (nb != c_.rank && !(c_.checked[static_cast<size_t>(nb) / 64] & (uint64_t{1} << (nb % 64)))) [[unlikely]]
    check_neighbour(nb);
  c_.tag = base_ + nsteps;
  rec_->tags.store(nsteps, std::memory_order_relaxed);
  rec_->hash.store(result_hash, std::memory_order_relaxed);
  // A call without steps (LL protocol) takes well under a microsecond: it ends stamped with its start time,
  // saving a clock read on the calls whose latency matters most; the recorder prints it as "done".
  // An LL call that never waited has no start time: 1 for both.
  uint64_t start = rec_->start_ns.load(std::memory_order_relaxed);
  if (start == 0) rec_->start_ns.store(start = 1, std::memory_order_relaxed);
  rec_->end_ns.store(nsteps && start != 1 ? fast_now_ns() : start, std::memory_order_release);
}

inline char* Exec::ll_out(size_t bytes) {
  // Calls 1 and 2 find their buffers unused; a member alone has no reader to wait for.
  if (c_.ll_synced + 1 < seq_ && seq_ > 2 && c_.size > 1) [[unlikely]] ll_sync_reuse();
  ll_bytes_ = bytes;
  return c_.ll(c_.rank, seq_).payload(bytes);
}

inline void Exec::ll_publish() {
  const uint64_t flag = (seq_ & 0xffffffffu) << 32 | ll_tag_;
  // Release is enough: notify() orders this store before its read of the sleeper counts (a full fence, or
  // the membarrier a sleeping waiter issues; sync/wait.h), so a locked store would only add a stall.
  c_.ll(c_.rank, seq_).flag.store(flag, std::memory_order_release);
  if (!recorded_) record(0);  // after the flag: the flag leaves first (engine.h)
  for (int m = 0; m < c_.size; ++m)
    if (m != c_.rank) sync::notify(c_.world[m]);
}

namespace detail {
// Copies up to 64 bytes with at most two overlapping fixed-size moves each way (the compiler inlines
// fixed-size memcpy): the payloads of the smallest calls skip the call into the C library.
inline void copy_small(char* d, const char* s, size_t n) {
  if (n >= 16) {
    char a[32], b[32];
    if (n >= 32) {
      std::memcpy(a, s, 32), std::memcpy(b, s + n - 32, 32);  // copy-ok: two 32-byte loads
      std::memcpy(d, a, 32), std::memcpy(d + n - 32, b, 32);  // copy-ok: two 32-byte stores
    } else {
      std::memcpy(a, s, 16), std::memcpy(b, s + n - 16, 16);  // copy-ok: two 16-byte loads
      std::memcpy(d, a, 16), std::memcpy(d + n - 16, b, 16);  // copy-ok: two 16-byte stores
    }
  } else if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, s, 8), std::memcpy(&b, s + n - 8, 8);  // copy-ok: 8-byte word loads
    std::memcpy(d, &a, 8), std::memcpy(d + n - 8, &b, 8);  // copy-ok: 8-byte word stores
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4), std::memcpy(&b, s + n - 4, 4);  // copy-ok: 4-byte word loads
    std::memcpy(d, &a, 4), std::memcpy(d + n - 4, &b, 4);  // copy-ok: 4-byte word stores
  } else if (n > 0) {
    const char a = s[0], b = s[n / 2], c = s[n - 1];
    d[0] = a, d[n / 2] = b, d[n - 1] = c;
  }
}
}  // namespace detail

inline void Exec::ll_put(const void* src, size_t bytes) {
  char* out = ll_out(bytes);
  if (bytes <= 64) detail::copy_small(out, static_cast<const char*>(src), bytes);
  else memcopy(out, src, bytes);
  ll_publish();
}

inline void Exec::ll_all_read() {
  c_.ll_synced = seq_;
  // Every peer has started this call, so the buffer of the next call (call seq_ - 1's) has no reader left:
  // take its lines now (ll.cc: ownership ahead of time), as many as this call's payload used.
  LLBuf& next = c_.ll(c_.rank, seq_ + 1);
  prefetch_for_write(&next.flag);
  if (ll_bytes_ > kLLInline) [[unlikely]]
    for (size_t off = 0; off < ll_bytes_; off += kCacheLine) prefetch_for_write(next.data + kLLInline + off);
}

inline const char* Exec::ll_in(int m, size_t bytes) {
  const LLBuf& b = c_.ll(m, seq_);
  if (m == c_.rank) return b.payload(bytes);
  uint64_t w = b.flag.load(std::memory_order_acquire);
  if ((w >> 32) != (seq_ & 0xffffffffu)) [[unlikely]]
    w = bytes > kLLInline ? ll_wait<true>(m, w, bytes) : ll_wait<false>(m, w, bytes);
  if (static_cast<uint32_t>(w) != ll_tag_) [[unlikely]] ll_mismatch(m, w);
  c_.checked[static_cast<size_t>(m) / 64] |= uint64_t{1} << (m % 64);
  if (++ll_read_ == c_.size - 1) [[unlikely]] ll_all_read();
  if (c_.stall_read_us) [[unlikely]] test_stall(c_.stall_read_us);  // TESSERA_TEST_STALL_READ
  return b.payload(bytes);
}

template <typename Ptr, typename Bytes>
void Exec::ll_in_all(Ptr* in, Bytes&& bytes) {
  for (int m : c_.wait_order) in[m] = ll_in(m, bytes(m));
}

}  // namespace tessera::coll
