#include "coll/engine.h"

#include <unistd.h>

#include <stdexcept>

#include "base/cpu.h"
#include "base/log.h"
#include "base/trace.h"
#include "sync/wait.h"

namespace tessera::coll {

CallDesc CallDesc::unpack(uint64_t w, uint64_t count) {
  CallDesc d;
  d.kind = static_cast<Kind>(w & 0xff);
  d.dtype = static_cast<DType>((w >> 8) & 0xff);
  d.op = static_cast<Op>((w >> 16) & 0xff);
  d.algo = static_cast<uint8_t>((w >> 24) & 0xff);
  d.root = static_cast<int32_t>(static_cast<uint32_t>(w >> 32));
  d.count = count;
  return d;
}

namespace {
// Callers store their flag with seq_cst (an xchg on x86): the store must be visible before notify() reads
// the peers' sleeper counts, or a peer that just went to sleep would be missed (store-load reordering).
void notify_members(const Communicator& c) {
  for (int m = 0; m < c.size; ++m)
    if (m != c.rank) sync::notify(c.world[m]);
}

std::string call_text(const CallDesc& d) {
  const Algorithm* a = find_algorithm(d.kind, d.algo);
  std::string s = fmt::format("{} count {} {}", kind_name(d.kind), d.count, dtype_name(d.dtype));
  if (d.kind == Kind::kAllreduce || d.kind == Kind::kReduce || d.kind == Kind::kReduceScatter ||
      d.kind == Kind::kReduceScatterv)
    s += fmt::format(" {}", op_name(d.op));
  if (d.root >= 0) s += fmt::format(" root {}", d.root);
  if (a) s += fmt::format(" ({})", a->name);
  return s;
}

bool g_mismatch_throws = false;

[[noreturn]] void mismatch(const Communicator& c, uint64_t seq, int me, const CallDesc& mine, int other,
                           const CallDesc& theirs) {
  std::string what;
  auto add = [&](const char* field, const std::string& a, const std::string& b) {
    if (a != b) what += fmt::format("{}{} {} vs {}", what.empty() ? "" : "; ", field, a, b);
  };
  add("collective", kind_name(mine.kind), kind_name(theirs.kind));
  add("count", std::to_string(mine.count), std::to_string(theirs.count));
  add("type", dtype_name(mine.dtype), dtype_name(theirs.dtype));
  add("op", op_name(mine.op), op_name(theirs.op));
  add("root", std::to_string(mine.root), std::to_string(theirs.root));
  if (what.empty()) {
    const Algorithm* a = find_algorithm(mine.kind, mine.algo);
    const Algorithm* b = find_algorithm(theirs.kind, theirs.algo);
    add("algorithm", a ? a->name : "?", b ? b->name : "?");
    what += " (set TESSERA_ALGO alike on every PE)";
  }
  std::string msg = fmt::format("{}{}collective mismatch on {}, call #{}: rank {} (PE {}) called {} but rank {} (PE {}) called {} "
             "[{}]. Every member must make the same collective calls in the same order.",
             c.caller ? c.caller : "", c.caller ? ": " : "", c.name, seq, me, c.world[me], call_text(mine), other, c.world[other], call_text(theirs), what);
  if (g_mismatch_throws) throw std::runtime_error(msg);
  log::fatal("{}", msg);
}
}  // namespace

void Exec::record(uint64_t start_ns) {
  recorded_ = true;
  Ctrl* me = c_.ctrl[c_.rank];
  const uint64_t packed = desc_.pack();
  // Both the record and the hot line are seqlocks: seq is 0 while the fields change, then the call number.
  // tags and hash are the record's results: end() writes them (nothing reads them while the call runs).
  rec_->seq.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  rec_->desc.store(packed, std::memory_order_relaxed);
  rec_->count.store(desc_.count, std::memory_order_relaxed);
  rec_->tag_base.store(base_, std::memory_order_relaxed);
  rec_->start_ns.store(start_ns, std::memory_order_relaxed);
  rec_->end_ns.store(0, std::memory_order_relaxed);
  rec_->seq.store(seq_, std::memory_order_release);
  me->hot.seq.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  me->hot.desc.store(packed, std::memory_order_relaxed);
  me->hot.count.store(desc_.count, std::memory_order_relaxed);
  me->hot.seq.store(seq_, std::memory_order_release);
}

void Exec::step_done(uint64_t t) {
  auto& done = c_.ctrl[c_.rank]->done.v;
  uint64_t v = base_ + t;
  if (done.load(std::memory_order_relaxed) < v) {
    done.store(v, std::memory_order_seq_cst);
    notify_members(c_);
    if (trace::g_on) [[unlikely]] trace::coll_step(t);
  }
}

void Exec::wait_free(uint64_t t) {
  uint64_t tg = base_ + t;
  if (tg <= kSlots) return;
  uint64_t need = tg - kSlots;
  if (need <= c_.free_upto) return;
  for (int m = 0; m < c_.size; ++m) {
    if (m == c_.rank) continue;
    auto& done = c_.ctrl[m]->done.v;
    coll_wait(
        c_, [&] { return done.load(std::memory_order_acquire) >= need; },
        [&] {
          return flight_recorder(c_, fmt::format("rank {} (PE {}) to release staging slot of step {} of call #{} "
                                                 "({} finished steps, needs {})",
                                                 m, c_.world[m], t, seq_, done.load(), need));
        });
  }
  c_.free_upto = need;
}

char* Exec::out(uint64_t t) {
  wait_free(t);
  return c_.slot(c_.rank, base_ + t);
}

void Exec::publish(uint64_t t) {
  c_.ctrl[c_.rank]->hot.ready.store(base_ + t, std::memory_order_seq_cst);
  notify_members(c_);
}

void Exec::check_peer(int m) {
  const Ctrl* p = c_.ctrl[m];
  uint64_t s1 = p->hot.seq.load(std::memory_order_acquire);
  uint64_t w = p->hot.desc.load(std::memory_order_relaxed);
  uint64_t cnt = p->hot.count.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t s2 = p->hot.seq.load(std::memory_order_relaxed);
  if (s1 != seq_ || s2 != seq_) {
    const Record& r = p->rec[seq_ % kRecords];
    if (r.seq.load(std::memory_order_acquire) != seq_) return;  // overwritten: cannot check (not reachable)
    w = r.desc.load(std::memory_order_relaxed);
    cnt = r.count.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r.seq.load(std::memory_order_relaxed) != seq_) return;
  }
  CallDesc theirs = CallDesc::unpack(w, cnt);
  if (w != desc_.pack() || cnt != desc_.count) mismatch(c_, seq_, c_.rank, desc_, m, theirs);
}

const char* Exec::in(int m, uint64_t t) {
  const uint64_t tg = base_ + t;
  if (m != c_.rank) {
    const Ctrl* p = c_.ctrl[m];
    uint64_t& word = c_.checked[static_cast<size_t>(m) / 64];
    const uint64_t bit = uint64_t{1} << (m % 64);
    coll_wait(
        c_,
        [&] {
          if (!(word & bit)) {
            if (p->hot.seq.load(std::memory_order_acquire) < seq_) return false;
            check_peer(m);
            word |= bit;
          }
          return p->hot.ready.load(std::memory_order_acquire) >= tg;
        },
        [&] {
          return flight_recorder(c_, fmt::format("rank {} (PE {}) to publish step {} of call #{} ({})", m,
                                                 c_.world[m], t, seq_, call_text(desc_)));
        });
    if (c_.stall_read_us) [[unlikely]] test_stall(c_.stall_read_us);  // TESSERA_TEST_STALL_READ
  }
  return c_.slot(m, tg);
}

void test_stall(uint32_t us) { ::usleep(us); }

void Exec::advance(uint64_t k) {
  step(k);
  base_ += k;
  rec_->tag_base.store(base_, std::memory_order_relaxed);
}

void Exec::wait_done(int m, uint64_t t) {
  const uint64_t tg = base_ + t;
  auto& done = c_.ctrl[m]->done.v;
  coll_wait(
      c_, [&] { return done.load(std::memory_order_acquire) >= tg; },
      [&] {
        return flight_recorder(c_, fmt::format("rank {} (PE {}) to finish step {} of call #{}", m, c_.world[m], t,
                                               seq_));
      });
}

void Exec::check_neighbour(int nb) {
  const Ctrl* p = c_.ctrl[nb];
  coll_wait(
      c_, [&] { return p->hot.seq.load(std::memory_order_acquire) >= seq_; },
      [&] {
        return flight_recorder(c_, fmt::format("rank {} (PE {}) to start call #{} ({})", nb, c_.world[nb], seq_,
                                               call_text(desc_)));
      });
  check_peer(nb);
}

void set_mismatch_throws(bool on) { g_mismatch_throws = on; }

void mismatch_fatal(const std::string& msg) {
  if (g_mismatch_throws) throw std::runtime_error(msg);
  log::fatal("{}", msg);
}

std::string flight_recorder(const Communicator& c, const std::string& waiting_for) {
  std::string s = fmt::format("{} on {}.\nFlight recorder (last collectives of every member, newest first):",
                              waiting_for, c.name);
  const uint64_t now = fast_now_ns();
  for (int m = 0; m < c.size; ++m) {
    const Ctrl* p = c.ctrl[m];
    uint64_t cur = p->hot.seq.load();
    uint64_t ready = p->hot.ready.load(), done = p->done.v.load();
    s += fmt::format("\n  rank {} (PE {}): {} calls started", m, c.world[m], cur);
    for (int k = 0; k < 4 && cur >= 1 + static_cast<uint64_t>(k); ++k) {
      const Record& r = p->rec[(cur - k) % kRecords];
      if (r.seq.load() != cur - k) break;
      CallDesc d = CallDesc::unpack(r.desc.load(), r.count.load());
      uint64_t base = r.tag_base.load(), end = r.end_ns.load(), start = r.start_ns.load();
      std::string state;
      if (end && end == start) {
        state = "done";
      } else if (end) {
        // fast_now_ns() may step back by a few ns when its rate is re-measured.
        state = fmt::format("done in {:.1f} us", static_cast<double>(end > start ? end - start : 0) / 1e3);
      } else if (const Algorithm* al = find_algorithm(d.kind, d.algo); al && al->ll) {
        // No steps to count: the LL call waits for its peers' buffers (start: when it began to wait).
        state = start ? fmt::format("RUNNING for {:.3f} s, waiting for peers' LL buffers",
                                    static_cast<double>(now > start ? now - start : 0) / 1e9)
                      : std::string("RUNNING, not waiting yet");
      } else {
        state = fmt::format("RUNNING for {:.3f} s: finished {} steps, published {}",
                            static_cast<double>(now > start ? now - start : 0) / 1e9, done >= base ? done - base + 1 : 0,
                            ready >= base ? ready - base + 1 : 0);
      }
      s += fmt::format("\n      #{} {}: {}", cur - k, call_text(d), state);
    }
  }
  return s;
}

}  // namespace tessera::coll
