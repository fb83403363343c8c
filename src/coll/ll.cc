// The LL ("low latency") protocol of Exec: small calls without steps, slots or done counters.
//
// Each member owns two LL buffers in its control block (comm.h: LLBuf), used by its odd and even calls.
// A call writes its payload into its own buffer, then stores the flag (call number << 32 | ll_tag) with
// release order; a reader waits for the flag to show the call number, compares the tag with its own call
// and reads the data. Payloads up to 56 bytes share the flag's cache line, so such an allreduce or a
// barrier costs one line per peer and one wait; larger ones start on the next line, line-aligned (copies and
// the reduction kernel then never split an access across two lines). Flags are call numbers, so nothing
// is ever reset.
//
// Reuse: call s rewrites the buffer last used by call s-2. Every member has finished reading it once every
// member has started call s-1 (a member reads buffers of call s-2 only inside that call). When call s-1
// read every member's LL buffer, it saw each of them inside call s-1, so nothing needs checking; otherwise
// (a stepped call, or an LL call of count 0, came in between) ll_out() first waits for every member's call
// number to reach s-1, which is normally the case already.
//
// Ownership ahead of time: a flag store to a line the peers hold (they read it in call s-2) waits for their
// copies to be invalidated, a cache-line round trip on the critical path of every small call. Once call s
// has read every peer's flag, every peer has started call s, so none reads the buffer of call s-1 any
// more, which call s+1 rewrites: ll_in() then issues PREFETCHW for its lines (the flag line, and as many
// payload lines as this call used), and the invalidations overlap the end of call s and the start of the
// next, which takes the round trip off the critical path: the barrier and 8-byte allreduce then beat
// plain processes passing one flag line each, which pay it every time (docs/coll.md, LL protocol).
// Issued right after this call's own flag store instead (with a third buffer, so that no reader is
// disturbed), it measured slower than not prefetching at all.
//
// The fast paths (ll_out, ll_publish, ll_put, ll_in) are inline in engine-inl.h; this file has the slow ones.
//
// Consistency: the tag is the exact call description of an LL call (kind, type, op, count), so a tag that
// differs from ours is a mismatch, reported by the full check (check_peer: the detailed message). A peer
// that runs a stepped call under this call number never writes its LL buffer: while waiting, the peer's
// published description is compared as soon as it has started the call.
#include <sched.h>

#include <cstring>

#include "base/log.h"
#include "coll/engine.h"
#include "sync/wait.h"

namespace tessera::coll {
namespace {
// How long an LL wait polls before it compares a peer's published call with its own (ll_wait).
constexpr uint64_t kPeerCheckNs = 200'000;
}  // namespace

void Exec::ll_sync_reuse() {
  stamp_wait();
  const uint64_t need = seq_ - 1;
  for (int m = 0; m < c_.size; ++m) {
    if (m == c_.rank) continue;
    const Ctrl* p = c_.ctrl[m];
    coll_wait(
        c_, [&] { return p->hot.seq.load(std::memory_order_acquire) >= need; },
        [&] {
          return flight_recorder(c_, fmt::format("rank {} (PE {}) to start call #{} (before call #{} rewrites its "
                                                 "LL buffer)", m, c_.world[m], need, seq_));
        });
  }
  c_.ll_synced = need;
}

// Waits for member m's flag to show this call; returns it. With kLines, every poll also asks for the
// payload lines (bytes past the flag's line): the reader then fetches them while it waits, as the writer
// writes them, not one cache-line transfer after it sees the flag (docs/coll.md, LL protocol). The
// flag-only wait stays apart: the same test in its poll loop made 8-byte calls measurably slower.
template <bool kLines>
uint64_t Exec::ll_wait(int m, uint64_t w, size_t bytes) {
  const LLBuf& b = c_.ll(m, seq_);
  const char* lines = b.payload(bytes);
  const uint64_t want = seq_ & 0xffffffffu;
  uint64_t& word = c_.checked[static_cast<size_t>(m) / 64];
  const uint64_t bit = uint64_t{1} << (m % 64);
  const Ctrl* p = c_.ctrl[m];
  uint32_t polls = 0;
  uint64_t slow_since = 0;
  coll_wait_for(
      c_, m,
      [&] {
        if constexpr (kLines)
          for (size_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(lines + off, 0, 3);
        w = b.flag.load(std::memory_order_acquire);
        if ((w >> 32) == want) return true;
        if (++polls == 64) {  // no longer a short wait
          stamp_wait();
          slow_since = fast_now_ns();
        }
        // Only after a long wait (thousands of polls, or kPeerCheckNs once the wait polls slowly): has the
        // peer started this call as a different, stepped collective? Reading the peer's hot line sooner
        // would make the peer's next write of it a cache-line transfer, on every call that waits a little.
        // The clock matters once the wait sleeps: a poll per futex slice would reach 4096 polls only after
        // many seconds, and a peer that ran a stepped call never rings this wait's doorbell.
        if (!(word & bit) &&
            (polls > 4096 || (polls > 64 && (polls & 15) == 0 && fast_now_ns() - slow_since > kPeerCheckNs)) &&
            p->hot.seq.load(std::memory_order_acquire) >= seq_) {
          check_peer(m);
          word |= bit;
        }
        return false;
      },
      [&] {
        return flight_recorder(c_, fmt::format("rank {} (PE {}) to publish its LL buffer for call #{} ({} count {} "
                                               "{}; the buffer holds call #{})",
                                               m, c_.world[m], seq_, kind_name(desc_.kind), desc_.count,
                                               dtype_name(desc_.dtype), w >> 32));
      });
  return w;
}

template uint64_t Exec::ll_wait<false>(int, uint64_t, size_t);
template uint64_t Exec::ll_wait<true>(int, uint64_t, size_t);

void Exec::ll_mismatch(int m, uint64_t w) {
  // The peer records its call right after its flag (engine.h): wait for the record, then report the
  // mismatch with both descriptions.
  const Ctrl* p = c_.ctrl[m];
  coll_wait(
      c_, [&] { return p->hot.seq.load(std::memory_order_acquire) >= seq_; },
      [&] { return flight_recorder(c_, fmt::format("rank {} (PE {}) to record call #{}", m, c_.world[m], seq_)); });
  check_peer(m);
  log::fatal("collective mismatch on {}, call #{}: rank {} (PE {}) published LL tag {:08x}, rank {} (PE {}) "
             "expected {:08x}", c_.name, seq_, m, c_.world[m], static_cast<uint32_t>(w), c_.rank,
             c_.world[c_.rank], ll_tag(desc_));
}

}  // namespace tessera::coll
