// RMA steps: contiguous put and get of 1 B .. 1 MiB (blocking, nbi + quiet, typed), strided iput/iget, and
// single-element p/g, to random PEs. Puts are verified by their target after a barrier (data and the bytes
// around it), gets by the getter against the source's pattern, which it recomputes from the seed.
#include <algorithm>

#include "soak.h"

namespace tessera::soak {
namespace {

// PE `src`'s choice of put for this step: size, offset in the target's buffer (unaligned on purpose), mode.
struct PutPlan {
  size_t bytes, off;
  int mode;  // 0 putmem, 1 putmem_nbi + quiet, 2 shmem_put64 (whole words only) or putmem
};
PutPlan put_plan(const Soak& s, int src) {
  Rng r = s.rng_of(src);
  PutPlan p;
  p.bytes = r.log_size(1, Arena::kRmaBytes - 64);
  p.off = r.below(64);
  p.mode = r.pick(3);
  return p;
}
const char* const kPutModes[] = {"shmem_putmem", "shmem_putmem_nbi+quiet", "shmem_put64"};

}  // namespace

// Every PE puts to (me + d) mod n, d from the shared generator: each PE has exactly one source.
void step_put(Soak& s) {
  Rng g = s.shared();
  const int d = s.n == 1 ? 0 : 1 + g.pick(s.n - 1);
  const int target = (s.me + d) % s.n, source = (s.me - d + s.n) % s.n;
  const PutPlan mine = put_plan(s, s.me), theirs = put_plan(s, source);
  const unsigned char guard = static_cast<unsigned char>(0xa5 ^ s.step);
  char* dst = s.a.rma_dst + Arena::kGuard;
  // My buffer: guard bytes all around where my source will write (the target's side of the check).
  std::memset(s.a.rma_dst, guard, Arena::kGuard + theirs.off);
  std::memset(dst + theirs.off + theirs.bytes, guard, Arena::kGuard);
  std::vector<char> src(mine.bytes);
  fill_pattern(src.data(), mine.bytes, s.key(s.me, 1));
  shmem_barrier_all();
  char* to = dst + mine.off;
  switch (mine.mode) {
    case 0: shmem_putmem(to, src.data(), mine.bytes, target); break;
    case 1:
      shmem_putmem_nbi(to, src.data(), mine.bytes, target);
      shmem_quiet();
      break;
    default:
      if (mine.bytes % 8 == 0) shmem_put64(to, src.data(), mine.bytes / 8, target);
      else shmem_putmem(to, src.data(), mine.bytes, target);
  }
  shmem_barrier_all();
  std::vector<char> want(theirs.bytes);
  fill_pattern(want.data(), theirs.bytes, s.key(source, 1));
  if (s.inject()) want[0] ^= 1;
  s.check_bytes(dst + theirs.off, want.data(), theirs.bytes, kPut, kPutModes[theirs.mode]);
  // The bytes before and after the transfer are untouched.
  std::vector<char> g1(Arena::kGuard + theirs.off, static_cast<char>(guard)), g2(Arena::kGuard, static_cast<char>(guard));
  s.check_bytes(s.a.rma_dst, g1.data(), g1.size(), kPut, "bytes before a put");
  s.check_bytes(dst + theirs.off + theirs.bytes, g2.data(), g2.size(), kPut, "bytes after a put");
}

// Every PE fills its source buffer with its pattern; each gets a random range from a random PE.
void step_get(Soak& s) {
  auto plan = [&](int pe, int* from, size_t* off, size_t* bytes, int* mode) {
    Rng r = s.rng_of(pe);
    *from = r.pick(s.n);
    *bytes = r.log_size(1, Arena::kRmaBytes / 2);
    *off = r.below(Arena::kRmaBytes / 2);
    *mode = r.pick(3);
  };
  // The bytes of my buffer that anyone reads: the furthest end among the gets aimed at me.
  size_t need = 0;
  for (int p = 0; p < s.n; ++p) {
    int from, mode;
    size_t off, bytes;
    plan(p, &from, &off, &bytes, &mode);
    if (from == s.me) need = std::max(need, off + bytes);
  }
  fill_pattern(s.a.rma_src, need, s.key(s.me, 2));
  shmem_barrier_all();
  int from, mode;
  size_t off, bytes;
  plan(s.me, &from, &off, &bytes, &mode);
  std::vector<char> got(bytes), want(off + bytes);
  const char* what = "shmem_getmem";
  if (mode == 0) {
    shmem_getmem(got.data(), s.a.rma_src + off, bytes, from);
  } else if (mode == 1) {
    what = "shmem_getmem_nbi+quiet";
    shmem_getmem_nbi(got.data(), s.a.rma_src + off, bytes, from);
    shmem_quiet();
  } else {
    what = "shmem_char_get";
    shmem_char_get(got.data(), s.a.rma_src + off, bytes, from);
  }
  fill_pattern(want.data(), off + bytes, s.key(from, 2));
  s.check_bytes(got.data(), want.data() + off, bytes, kGet, what);
}

// Strided: every PE iputs to (me + d) mod n with its own strides, and igets from a random PE.
void step_strided(Soak& s) {
  Rng g = s.shared();
  const int d = s.n == 1 ? 0 : 1 + g.pick(s.n - 1);
  const int target = (s.me + d) % s.n, source = (s.me - d + s.n) % s.n;
  struct Plan {
    size_t nelems;
    ptrdiff_t dst, sst;
    int from;
  };
  auto plan = [&](int pe) {
    Rng r = s.rng_of(pe);
    Plan p;
    p.dst = 1 + r.pick(4);
    p.sst = 1 + r.pick(3);
    p.nelems = 1 + r.below(Arena::kStrided / 4 - 1);
    p.from = r.pick(s.n);
    return p;
  };
  auto value = [&](int pe, size_t i) { return static_cast<int64_t>(mix(s.key(pe, 3) + i)); };
  const int64_t sentinel = static_cast<int64_t>(s.key(s.me, 4));
  std::fill(s.a.strided, s.a.strided + Arena::kStrided, sentinel);
  // iget source: my rma_src as int64 values (everyone may read it).
  auto* src64 = reinterpret_cast<int64_t*>(s.a.rma_src);
  for (size_t i = 0; i < Arena::kStrided; ++i) src64[i] = value(s.me, i);
  shmem_barrier_all();
  const Plan mine = plan(s.me);
  std::vector<int64_t> local(mine.nelems * mine.sst);
  for (size_t i = 0; i < local.size(); ++i) local[i] = value(s.me, i);
  shmem_int64_iput(s.a.strided, local.data(), mine.dst, mine.sst, mine.nelems, target);
  // iget from `from`: every sst-th of its values into every dst-th of mine.
  std::vector<int64_t> got(mine.nelems * mine.dst, -1);
  shmem_int64_iget(got.data(), src64, mine.dst, mine.sst, mine.nelems, mine.from);
  for (size_t i = 0; i < mine.nelems; ++i)
    if (got[i * mine.dst] != value(mine.from, i * mine.sst))
      s.fail("shmem_int64_iget", hex(value(mine.from, i * mine.sst)), hex(got[i * mine.dst]));
  s.count(kStrided);
  shmem_barrier_all();
  const Plan th = plan(source);
  for (size_t i = 0; i < Arena::kStrided; ++i) {
    const bool written = i % th.dst == 0 && i / th.dst < th.nelems;
    const int64_t want = written ? value(source, (i / th.dst) * th.sst) : sentinel;
    if (s.a.strided[i] != want)
      s.fail(written ? "shmem_int64_iput" : "shmem_int64_iput (element between strides)", hex(want),
             hex(s.a.strided[i]) + " at element " + std::to_string(i));
  }
  s.count(kStrided);
}

// p/g: every PE writes one word into slot[me] of a random PE and reads one word of a random PE.
void step_pg(Soak& s) {
  const int64_t sentinel = static_cast<int64_t>(s.key(s.me, 5));
  std::fill(s.a.slots, s.a.slots + s.n, sentinel);
  s.a.scratch[8] = static_cast<int64_t>(s.key(s.me, 6));
  auto plan = [&](int pe, int* to, int* from) {
    Rng r = s.rng_of(pe);
    *to = r.pick(s.n);
    *from = r.pick(s.n);
  };
  shmem_barrier_all();
  int to, from;
  plan(s.me, &to, &from);
  shmem_int64_p(s.a.slots + s.me, static_cast<int64_t>(s.key(s.me, 7)), to);
  const int64_t got = shmem_int64_g(s.a.scratch + 8, from);
  s.check(got == static_cast<int64_t>(s.key(from, 6)), kPG, "shmem_int64_g", hex(s.key(from, 6)), hex(got));
  shmem_barrier_all();
  for (int p = 0; p < s.n; ++p) {
    int pt, pf;
    plan(p, &pt, &pf);
    const int64_t want = pt == s.me ? static_cast<int64_t>(s.key(p, 7)) : sentinel;
    if (s.a.slots[p] != want)
      s.fail(pt == s.me ? "shmem_int64_p" : "shmem_int64_p (slot nobody wrote)", hex(want),
             hex(s.a.slots[p]) + " in slot " + std::to_string(p));
  }
  s.count(kPG);
}

}  // namespace tessera::soak
