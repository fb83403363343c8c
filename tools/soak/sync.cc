// Atomics, signals and point-to-point waits. Every PE issues its own random operations at random PEs; each
// target recomputes every source's operations from the seed and checks the totals once all are complete
// (atomics), or waits for exactly the values its sources write (signals, waits).
#include <algorithm>
#include <thread>

#include "soak.h"

namespace tessera::soak {
namespace {

// Atomic words of each PE (Arena::amo), each touched by one family of operations only, so that the
// operations on a word commute and its final value is known whatever the interleaving.
enum Word { kAdd, kXor, kOr, kAnd, kCas, kSwap, kNumWords };
enum AmoOp { kFetchAdd, kAddOp, kInc, kFetchInc, kFetchAddNbi, kFetchXor, kXorOp, kFetchOr, kOrOp, kFetchAnd, kAndOp,
             kCasInc, kSwapOp, kNumAmoOps };
const char* const kAmoNames[] = {"fetch_add", "add", "inc", "fetch_inc", "fetch_add_nbi", "fetch_xor", "xor",
                                 "fetch_or", "or", "fetch_and", "and", "compare_swap loop", "swap"};

struct Amo {
  int op, pe;
  uint64_t v;
};
std::vector<Amo> amo_plan(const Soak& s, int pe) {
  Rng r = s.rng_of(pe);
  std::vector<Amo> v(1 + r.below(32));
  for (Amo& a : v) {
    a.op = r.pick(kNumAmoOps);
    a.pe = r.pick(s.n);
    a.v = r.next();
    if (a.op <= kFetchAddNbi) a.v = 1 + a.v % 1000;
    if (a.op == kFetchInc || a.op == kInc) a.v = 1;
    if (a.op == kFetchOr || a.op == kOrOp) a.v = uint64_t{1} << (a.v % 64);  // a few bits: OR must not saturate
    if (a.op == kFetchAnd || a.op == kAndOp) a.v = ~(uint64_t{1} << (a.v % 64));
  }
  return v;
}
uint64_t initial(const Soak& s, int pe, int w) {
  const uint64_t k = s.key(pe, 100 + w);
  return w == kAdd || w == kCas ? k % 100000 : k;
}

}  // namespace

void step_atomics(Soak& s) {
  auto* w = reinterpret_cast<uint64_t*>(s.a.amo);
  for (int i = 0; i < kNumWords; ++i) w[i] = initial(s, s.me, i);
  shmem_barrier_all();
  const std::vector<Amo> mine = amo_plan(s, s.me);
  uint64_t swapped_in = 0, swapped_out = 0;
  std::vector<uint64_t> fetched(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    const Amo& a = mine[i];
    uint64_t& f = fetched[i];
    switch (a.op) {
      case kFetchAdd: f = shmem_uint64_atomic_fetch_add(w + kAdd, a.v, a.pe); break;
      case kAddOp: shmem_uint64_atomic_add(w + kAdd, a.v, a.pe); break;
      case kInc: shmem_uint64_atomic_inc(w + kAdd, a.pe); break;
      case kFetchInc: f = shmem_uint64_atomic_fetch_inc(w + kAdd, a.pe); break;
      case kFetchAddNbi: shmem_uint64_atomic_fetch_add_nbi(&f, w + kAdd, a.v, a.pe); break;
      case kFetchXor: f = shmem_uint64_atomic_fetch_xor(w + kXor, a.v, a.pe); break;
      case kXorOp: shmem_uint64_atomic_xor(w + kXor, a.v, a.pe); break;
      case kFetchOr: f = shmem_uint64_atomic_fetch_or(w + kOr, a.v, a.pe); break;
      case kOrOp: shmem_uint64_atomic_or(w + kOr, a.v, a.pe); break;
      case kFetchAnd: f = shmem_uint64_atomic_fetch_and(w + kAnd, a.v, a.pe); break;
      case kAndOp: shmem_uint64_atomic_and(w + kAnd, a.v, a.pe); break;
      case kCasInc: {  // increment by compare-and-swap, retried while others win (contended on purpose)
        const auto deadline = std::chrono::steady_clock::now() + Soak::kPollDeadline;
        uint64_t old = shmem_uint64_atomic_fetch(w + kCas, a.pe);
        for (;;) {
          const uint64_t seen = shmem_uint64_atomic_compare_swap(w + kCas, old, old + 1, a.pe);
          if (seen == old) break;
          old = seen;
          if (std::chrono::steady_clock::now() > deadline)
            s.fail("compare_swap loop", "success within the deadline", "hang (no progress)");
        }
        break;
      }
      case kSwapOp:
        swapped_in += a.v;
        swapped_out += shmem_uint64_atomic_swap(w + kSwap, a.v, a.pe);
        break;
    }
  }
  shmem_quiet();  // the nbi fetches have landed
  // Every PE's final words, from every source's plan.
  std::vector<uint64_t> fin_add(s.n), fin_xor(s.n), fin_or(s.n), fin_and(s.n), fin_cas(s.n);
  for (int p = 0; p < s.n; ++p) {
    fin_add[p] = initial(s, p, kAdd), fin_xor[p] = initial(s, p, kXor), fin_or[p] = initial(s, p, kOr);
    fin_and[p] = initial(s, p, kAnd), fin_cas[p] = initial(s, p, kCas);
  }
  for (int p = 0; p < s.n; ++p)
    for (const Amo& a : amo_plan(s, p)) {
      if (a.op <= kFetchAddNbi) fin_add[a.pe] += a.v;
      else if (a.op <= kXorOp) fin_xor[a.pe] ^= a.v;
      else if (a.op <= kOrOp) fin_or[a.pe] |= a.v;
      else if (a.op <= kAndOp) fin_and[a.pe] &= a.v;
      else if (a.op == kCasInc) fin_cas[a.pe] += 1;
    }
  // A fetched value lies between the target word's initial and final value: for additions numerically, for
  // or/and as bit sets (bits are only set, or only cleared).
  for (size_t i = 0; i < mine.size(); ++i) {
    const Amo& a = mine[i];
    const uint64_t f = fetched[i];
    bool ok = true;
    std::string range;
    if (a.op == kFetchAdd || a.op == kFetchInc || a.op == kFetchAddNbi) {
      ok = f >= initial(s, a.pe, kAdd) && f + a.v <= fin_add[a.pe];
      range = "from " + std::to_string(initial(s, a.pe, kAdd)) + " to " + std::to_string(fin_add[a.pe] - a.v);
    } else if (a.op == kFetchOr) {
      const uint64_t i0 = initial(s, a.pe, kOr);
      ok = (f & i0) == i0 && (f | fin_or[a.pe]) == fin_or[a.pe];
      range = "bits between " + hex(i0) + " and " + hex(fin_or[a.pe]);
    } else if (a.op == kFetchAnd) {
      const uint64_t i0 = initial(s, a.pe, kAnd);
      ok = (f | i0) == i0 && (f & fin_and[a.pe]) == fin_and[a.pe];
      range = "bits between " + hex(fin_and[a.pe]) + " and " + hex(i0);
    } else {
      continue;
    }
    if (!ok) s.fail(kAmoNames[a.op], range + " (PE " + std::to_string(a.pe) + ")", hex(f));
    s.count(kAtomics);
  }
  uint64_t add = fin_add[s.me], x = fin_xor[s.me], o = fin_or[s.me], an = fin_and[s.me], cas = fin_cas[s.me];
  shmem_barrier_all();
  if (s.inject()) add += 1;
  s.check(w[kAdd] == add, kAtomics, "add total (fetch_add/add/inc/fetch_inc/fetch_add_nbi)", std::to_string(add),
          std::to_string(w[kAdd]));
  s.check(w[kXor] == x, kAtomics, "xor total (fetch_xor/xor)", hex(x), hex(w[kXor]));
  s.check(w[kOr] == o, kAtomics, "or total (fetch_or/or)", hex(o), hex(w[kOr]));
  s.check(w[kAnd] == an, kAtomics, "and total (fetch_and/and)", hex(an), hex(w[kAnd]));
  s.check(w[kCas] == cas, kAtomics, "compare_swap increments", std::to_string(cas), std::to_string(w[kCas]));
  // Swaps conserve values: the sum of every word's final value and of every value swapped out equals the
  // sum of the initial values and of every value swapped in (mod 2^64), summed over the job.
  const uint64_t balance = w[kSwap] + swapped_out - swapped_in - initial(s, s.me, kSwap);
  auto* red = reinterpret_cast<uint64_t*>(s.a.scratch + 4);
  red[0] = balance;
  shmem_barrier_all();
  shmem_uint64_sum_reduce(SHMEM_TEAM_WORLD, red + 1, red, 1);
  s.check(red[1] == 0, kAtomics, "swap conservation (sum of final + fetched - swapped in - initial)", "0",
          hex(red[1]));
}

// Put-with-signal: every PE puts to (me + d) mod n with a set or add signal; or all PEs to one root, adding.
void step_signal(Soak& s) {
  Rng g = s.shared();
  const bool to_root = g.pick(3) == 0;
  const int root = g.pick(s.n);
  const int d = s.n == 1 ? 0 : 1 + g.pick(s.n - 1);
  struct Plan {
    size_t bytes;
    bool add, nbi;
    uint64_t sig;
  };
  auto plan = [&](int pe) {
    Rng r = s.rng_of(pe);
    Plan p;
    p.bytes = r.log_size(1, to_root ? Arena::kRmaBytes / 8 / static_cast<size_t>(std::max(s.n, 8)) : 65536);
    p.add = to_root || r.coin();
    p.nbi = r.coin();
    p.sig = p.add ? 1 + r.below(1000) : ((s.step + 1) << 16) | static_cast<uint64_t>(pe + 1);
    return p;
  };
  const size_t region = to_root ? Arena::kRmaBytes / static_cast<size_t>(std::max(s.n, 8)) : 0;
  s.a.sigs[0] = 0;
  shmem_barrier_all();
  const Plan mine = plan(s.me);
  const int target = to_root ? root : (s.me + d) % s.n;
  std::vector<char> src(mine.bytes);
  fill_pattern(src.data(), mine.bytes, s.key(s.me, 8));
  char* dst = s.a.rma_dst + (to_root ? region * static_cast<size_t>(s.me) : 0);
  const int op = mine.add ? SHMEM_SIGNAL_ADD : SHMEM_SIGNAL_SET;
  if (mine.nbi) {
    shmem_putmem_signal_nbi(dst, src.data(), mine.bytes, s.a.sigs, mine.sig, op, target);
    shmem_quiet();
  } else {
    shmem_putmem_signal(dst, src.data(), mine.bytes, s.a.sigs, mine.sig, op, target);
  }
  // My sources and the signal value they leave: no barrier, the signal says the data is there.
  std::vector<int> sources;
  uint64_t want = 0;
  if (to_root) {
    if (s.me == root)
      for (int p = 0; p < s.n; ++p) {
        sources.push_back(p);
        want += plan(p).sig;
      }
  } else {
    const int src_pe = (s.me - d + s.n) % s.n;
    sources.push_back(src_pe);
    want = plan(src_pe).sig;
  }
  if (!sources.empty()) {
    const uint64_t got = shmem_signal_wait_until(s.a.sigs, SHMEM_CMP_EQ, want);
    s.check(got == want, kSignal, "shmem_signal_wait_until", std::to_string(want), std::to_string(got));
    s.check(shmem_signal_fetch(s.a.sigs) == want, kSignal, "shmem_signal_fetch", std::to_string(want),
            std::to_string(shmem_signal_fetch(s.a.sigs)));
    for (int p : sources) {
      const Plan th = plan(p);
      std::vector<char> w(th.bytes);
      fill_pattern(w.data(), th.bytes, s.key(p, 8));
      s.check_bytes(s.a.rma_dst + (to_root ? region * static_cast<size_t>(p) : 0), w.data(), th.bytes, kSignal,
                    th.nbi ? "shmem_putmem_signal_nbi data" : "shmem_putmem_signal data");
    }
  }
}

// Waits: every PE writes a value into slot[me] of a random subset of PEs (p, atomic_set, or put + fence);
// each PE waits for its writers with one of wait_until, wait_until_all/any/some, or a test loop.
void step_wait(Soak& s) {
  Rng g = s.shared();
  const int how = g.pick(5);
  auto targets = [&](int pe) {
    Rng r = s.rng_of(pe);
    return r.next() | (uint64_t{1} << r.pick(s.n));  // at least one
  };
  auto value = [&](int pe) { return static_cast<int64_t>(s.key(pe, 9) | 1); };  // never the reset value 0
  std::fill(s.a.slots, s.a.slots + s.n, 0);
  shmem_barrier_all();
  const uint64_t mask = targets(s.me);
  Rng r = s.rng_of(s.me);
  r.next();
  r.next();
  const int write = r.pick(3);
  for (int t = 0; t < s.n && t < 64; ++t) {
    if (!(mask >> t & 1)) continue;
    if (write == 0) shmem_int64_p(s.a.slots + s.me, value(s.me), t);
    else if (write == 1) shmem_int64_atomic_set(s.a.slots + s.me, value(s.me), t);
    else {
      const int64_t v = value(s.me);
      shmem_int64_put(s.a.slots + s.me, &v, 1, t);
    }
  }
  shmem_quiet();
  std::vector<int> status(s.n, 1);  // 1: ignore (not my writer)
  size_t writers = 0;
  for (int p = 0; p < s.n && p < 64; ++p)
    if (targets(p) >> s.me & 1) status[p] = 0, ++writers;
  const char* what = "shmem_int64_wait_until";
  switch (how) {
    case 0:
      for (int p = 0; p < s.n; ++p)
        if (!status[p]) shmem_int64_wait_until(s.a.slots + p, SHMEM_CMP_EQ, value(p));
      break;
    case 1:
      what = "shmem_int64_wait_until_all";
      shmem_int64_wait_until_all(s.a.slots, s.n, status.data(), SHMEM_CMP_NE, 0);
      break;
    case 2: {
      what = "shmem_int64_wait_until_any";
      std::vector<int> st = status;
      for (size_t k = 0; k < writers; ++k) {
        const size_t i = shmem_int64_wait_until_any(s.a.slots, s.n, st.data(), SHMEM_CMP_NE, 0);
        if (i >= static_cast<size_t>(s.n) || st[i]) s.fail(what, "a writer's slot", "index " + std::to_string(i));
        st[i] = 1;
      }
      break;
    }
    case 3: {
      what = "shmem_int64_wait_until_some";
      std::vector<int> st = status;
      std::vector<size_t> idx(s.n);
      for (size_t seen = 0; seen < writers;) {
        const size_t k = shmem_int64_wait_until_some(s.a.slots, s.n, idx.data(), st.data(), SHMEM_CMP_NE, 0);
        if (k == 0) s.fail(what, "at least one index", "0");
        for (size_t j = 0; j < k; ++j) st[idx[j]] = 1;
        seen += k;
      }
      break;
    }
    default: {
      what = "shmem_int64_test loop";
      const auto deadline = std::chrono::steady_clock::now() + Soak::kPollDeadline;
      for (int p = 0; p < s.n; ++p)
        while (!status[p] && !shmem_int64_test(s.a.slots + p, SHMEM_CMP_EQ, value(p))) {
          if (std::chrono::steady_clock::now() > deadline)
            s.fail(what, "PE " + std::to_string(p) + "'s value within the deadline", "hang");
          std::this_thread::yield();
        }
    }
  }
  for (int p = 0; p < s.n; ++p) {
    int64_t want = status[p] ? 0 : value(p);
    if (!status[p] && s.inject()) want ^= 2;
    s.check(s.a.slots[p] == want, kWait, what, hex(want), hex(s.a.slots[p]) + " in slot " + std::to_string(p));
  }
}

}  // namespace tessera::soak
