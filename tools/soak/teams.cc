// OpenSHMEM team collectives (on the world team and on split teams) and team splits: split_strided and
// split_2d with random parameters, collectives on the new teams (OpenSHMEM and a Comm made from the team),
// then destroy. Data of team rank q comes from a key every member derives from the shared generator, so each
// member computes what every other member contributed.
#include <tessera/coll.hpp>

#include <algorithm>

#include "coll/reduce/reference.h"
#include "soak.h"

namespace tessera::soak {
namespace {

using coll::DType;
using coll::Op;

// The typed team reductions the soak draws from: every operator over types of each class.
struct Reduction {
  DType t;
  Op op;
  const char* name;
  int (*fn)(shmem_team_t, void*, const void*, size_t);
};
#define SOAK_RED(T, N, OPN, DT, OP)                                                                  \
  Reduction {                                                                                        \
    DType::DT, Op::OP, "shmem_" #N "_" #OPN "_reduce", [](shmem_team_t t, void* d, const void* s, size_t n) { \
      return shmem_##N##_##OPN##_reduce(t, static_cast<T*>(d), static_cast<const T*>(s), n);         \
    }                                                                                                \
  }
const Reduction kReductions[] = {
    SOAK_RED(int64_t, int64, sum, kInt64, kSum),    SOAK_RED(int64_t, int64, prod, kInt64, kProd),
    SOAK_RED(int64_t, int64, min, kInt64, kMin),    SOAK_RED(int64_t, int64, max, kInt64, kMax),
    SOAK_RED(int64_t, int64, and, kInt64, kBand),   SOAK_RED(int64_t, int64, or, kInt64, kBor),
    SOAK_RED(int64_t, int64, xor, kInt64, kBxor),   SOAK_RED(int32_t, int32, sum, kInt32, kSum),
    SOAK_RED(uint8_t, uint8, xor, kUint8, kBxor),   SOAK_RED(int16_t, int16, max, kInt16, kMax),
    SOAK_RED(uint64_t, uint64, sum, kUint64, kSum), SOAK_RED(uint32_t, uint32, and, kUint32, kBand),
    SOAK_RED(float, float, sum, kFloat32, kSum),    SOAK_RED(float, float, min, kFloat32, kMin),
    SOAK_RED(double, double, sum, kFloat64, kSum),  SOAK_RED(double, double, prod, kFloat64, kProd),
    SOAK_RED(double, double, max, kFloat64, kMax),  SOAK_RED(long double, longdouble, sum, kLongDouble, kSum),
    SOAK_RED(tessera_complexd, complexd, sum, kComplex128, kSum),
    SOAK_RED(tessera_complexf, complexf, prod, kComplex64, kProd),
};
#undef SOAK_RED

uint64_t rank_key(uint64_t k, int q) { return mix(k ^ (static_cast<uint64_t>(q + 1) * 0x2545f4914f6cdd1dull)); }

}  // namespace

void team_collective(Soak& s, Rng& g, shmem_team_t team, int cat) {
  const int r = shmem_team_my_pe(team), sz = shmem_team_n_pes(team);
  const uint64_t k = g.next();
  char* src = s.a.coll_send;
  char* dst = s.a.coll_recv;
  const size_t cap = Arena::kCollBytes / static_cast<size_t>(std::max(sz, 1));  // bytes per member block
  std::vector<char> want;
  const int what = g.pick(9);
  const char* name = "";
  auto pattern_of = [&](int q, size_t bytes) {
    std::vector<char> v(bytes);
    fill_pattern(v.data(), bytes, rank_key(k, q));
    return v;
  };
  switch (what) {
    case 0: {  // broadcast: every member's dest (the root's too) gets the root's source
      name = "shmem_broadcastmem";
      const size_t bytes = g.log_size(1, std::min<size_t>(cap, 256 << 10));
      const int root = g.pick(sz);
      fill_pattern(src, bytes, rank_key(k, r));
      if (shmem_broadcastmem(team, dst, src, bytes, root) != 0) s.fail(name, "0", "nonzero");
      want = pattern_of(root, bytes);
      break;
    }
    case 1:
    case 2: {  // collect (sizes differ per member) and fcollect (same size): concatenation in rank order
      const bool f = what == 2;
      name = f ? "shmem_fcollectmem" : "shmem_collectmem";
      std::vector<size_t> bytes(sz);
      const size_t same = g.log_size(1, std::min<size_t>(cap, 64 << 10));
      for (int q = 0; q < sz; ++q) bytes[q] = f ? same : g.below(std::min<size_t>(cap, 64 << 10));
      fill_pattern(src, bytes[r], rank_key(k, r));
      if ((f ? shmem_fcollectmem(team, dst, src, bytes[r]) : shmem_collectmem(team, dst, src, bytes[r])) != 0)
        s.fail(name, "0", "nonzero");
      for (int q = 0; q < sz; ++q) {
        const std::vector<char> p = pattern_of(q, bytes[q]);
        want.insert(want.end(), p.begin(), p.end());
      }
      break;
    }
    case 3: {  // alltoall: block q of my dest is block r of member q's source
      name = "shmem_alltoallmem";
      const size_t bytes = g.log_size(1, std::min<size_t>(cap, 32 << 10));
      fill_pattern(src, bytes * sz, rank_key(k, r));
      if (shmem_alltoallmem(team, dst, src, bytes) != 0) s.fail(name, "0", "nonzero");
      for (int q = 0; q < sz; ++q) {
        const std::vector<char> p = pattern_of(q, bytes * sz);
        want.insert(want.end(), p.begin() + static_cast<ptrdiff_t>(bytes * r),
                    p.begin() + static_cast<ptrdiff_t>(bytes * (r + 1)));
      }
      break;
    }
    case 4: {  // alltoalls: element (q*cnt + i)*dst of my dest is element (r*cnt + i)*sst of member q's source
      name = "shmem_int64_alltoalls";
      const ptrdiff_t ds = 1 + g.pick(3), ss = 1 + g.pick(3);
      const size_t cnt = 1 + g.below(std::min<size_t>(cap / 8 / 3, 512));
      auto* s64 = reinterpret_cast<int64_t*>(src);
      auto* d64 = reinterpret_cast<int64_t*>(dst);
      const size_t dlen = cnt * sz * ds;
      const int64_t gap = static_cast<int64_t>(k);
      std::fill(d64, d64 + dlen, gap);
      fill_pattern(src, cnt * sz * ss * 8, rank_key(k, r));
      shmem_team_sync(team);  // every member's gap fill is done before anyone writes into it
      if (shmem_int64_alltoalls(team, d64, s64, ds, ss, cnt) != 0) s.fail(name, "0", "nonzero");
      want.resize(dlen * 8);
      auto* w = reinterpret_cast<int64_t*>(want.data());
      std::fill(w, w + dlen, gap);
      for (int q = 0; q < sz; ++q) {
        const std::vector<char> p = pattern_of(q, cnt * sz * ss * 8);
        const auto* p64 = reinterpret_cast<const int64_t*>(p.data());
        for (size_t i = 0; i < cnt; ++i) w[(q * cnt + i) * ds] = p64[(r * cnt + i) * ss];
      }
      break;
    }
    case 5:
    case 6: {  // a reduction of exactly representable inputs (coll/reduce/reference.h), against the reference
      const Reduction& red = kReductions[g.pick(static_cast<int>(std::size(kReductions)))];
      name = red.name;
      const size_t es = coll::dtype_size(red.t);
      const size_t count = g.log_size(1, std::min<size_t>(cap / es, 4096));
      const unsigned seed = static_cast<unsigned>(k % 1000);
      for (size_t i = 0; i < count; ++i) coll::ref::store(src, i, red.t, coll::ref::input_value(r, i, red.t, red.op, seed));
      const bool inplace = g.coin();
      if (inplace) std::memcpy(dst, src, count * es);
      if (red.fn(team, dst, inplace ? dst : src, count) != 0) s.fail(name, "0", "nonzero");
      want.resize(count * es);
      for (size_t i = 0; i < count; ++i) coll::ref::expected(want.data() + i * es, i, red.t, red.op, sz, seed);
      if (red.t == DType::kLongDouble)  // 10 significant bytes of 16: compare values, not padding
        for (size_t i = 0; i < count; ++i) {
          const long double a = reinterpret_cast<long double*>(dst)[i], b = reinterpret_cast<long double*>(want.data())[i];
          if (a != b) s.fail(name, std::to_string(static_cast<double>(b)), std::to_string(static_cast<double>(a)));
          std::memcpy(want.data() + i * es, dst + i * es, es);
        }
      break;
    }
    case 7: {  // scans: inclusive (ranks 0..r) or exclusive (0..r-1; rank 0 gets 0)
      const bool in = g.coin();
      name = in ? "shmem_int64_sum_inscan" : "shmem_int64_sum_exscan";
      const size_t count = g.log_size(1, std::min<size_t>(cap / 8, 4096));
      const unsigned seed = static_cast<unsigned>(k % 1000);
      auto* s64 = reinterpret_cast<int64_t*>(src);
      for (size_t i = 0; i < count; ++i) s64[i] = static_cast<int64_t>(coll::ref::input_value(r, i, DType::kInt64, Op::kSum, seed));
      if ((in ? shmem_int64_sum_inscan(team, reinterpret_cast<int64_t*>(dst), s64, count)
              : shmem_int64_sum_exscan(team, reinterpret_cast<int64_t*>(dst), s64, count)) != 0)
        s.fail(name, "0", "nonzero");
      want.assign(count * 8, 0);
      const int upto = in ? r + 1 : r;
      if (upto > 0)
        for (size_t i = 0; i < count; ++i) coll::ref::expected(want.data() + i * 8, i, DType::kInt64, Op::kSum, upto, seed);
      break;
    }
    default: {  // team_sync orders: a put completed (quiet) before it is seen by its target after it
      name = "shmem_team_sync";
      const int next = shmem_team_translate_pe(team, (r + 1) % sz, SHMEM_TEAM_WORLD);
      const int64_t v = static_cast<int64_t>(rank_key(k, r));
      shmem_int64_p(reinterpret_cast<int64_t*>(dst), v, next);
      shmem_quiet();
      shmem_team_sync(team);
      want.resize(8);
      const int64_t w = static_cast<int64_t>(rank_key(k, (r - 1 + sz) % sz));
      std::memcpy(want.data(), &w, 8);
    }
  }
  s.check_bytes(dst, want.data(), want.size(), cat, name);
  shmem_team_sync(team);  // nobody reuses the buffers while a member still reads them
}

void step_shmem_coll(Soak& s) {
  Rng g = s.shared();
  g.next();
  team_collective(s, g, SHMEM_TEAM_WORLD, kShmemColl);
}

// A random split, checked (rank, size, translation), used for collectives, and destroyed.
void step_teams(Soak& s) {
  Rng g = s.shared();
  g.next();
  if (g.coin()) {
    const int size = 1 + g.pick(s.n);
    const int max_stride = size == 1 ? s.n : std::max(1, (s.n - 1) / (size - 1));
    const int stride = 1 + g.pick(max_stride);
    const int start = g.pick(s.n - (size - 1) * stride);
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, nullptr, 0, &t) != 0)
      s.fail("shmem_team_split_strided", "0", "nonzero");
    const bool member = s.me >= start && (s.me - start) % stride == 0 && (s.me - start) / stride < size;
    s.check((t != SHMEM_TEAM_INVALID) == member, kTeams, "shmem_team_split_strided membership",
            member ? "a team" : "SHMEM_TEAM_INVALID", t != SHMEM_TEAM_INVALID ? "a team" : "SHMEM_TEAM_INVALID");
    if (!member) return;
    const int r = (s.me - start) / stride;
    s.check(shmem_team_my_pe(t) == r, kTeams, "shmem_team_my_pe", std::to_string(r), std::to_string(shmem_team_my_pe(t)));
    s.check(shmem_team_n_pes(t) == size, kTeams, "shmem_team_n_pes", std::to_string(size), std::to_string(shmem_team_n_pes(t)));
    const int q = g.pick(size);
    s.check(shmem_team_translate_pe(t, q, SHMEM_TEAM_WORLD) == start + q * stride, kTeams, "shmem_team_translate_pe",
            std::to_string(start + q * stride), std::to_string(shmem_team_translate_pe(t, q, SHMEM_TEAM_WORLD)));
    for (int i = 1 + g.pick(3); i > 0; --i) team_collective(s, g, t, kTeams);
    if (g.coin()) {  // the same team as a communicator of the C++ collective API
      coll::Comm c = coll::Comm::from_team(t);
      std::vector<int64_t> v(1 + g.below(1000)), out(v.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i) * (c.rank() + 1);
      c.allreduce(v.data(), out.data(), v.size(), coll::DataType::kInt64, coll::RedOp::kSum);
      const int64_t tri = static_cast<int64_t>(size) * (size + 1) / 2;
      for (size_t i = 0; i < v.size(); ++i)
        if (out[i] != static_cast<int64_t>(i) * tri)
          s.fail("Comm::from_team allreduce", std::to_string(static_cast<int64_t>(i) * tri), std::to_string(out[i]));
      s.count(kTeams);
    }  // the Comm is destroyed (collectively) before its team
    shmem_team_destroy(t);
  } else {
    const int xrange = 1 + g.pick(s.n);
    shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    if (shmem_team_split_2d(SHMEM_TEAM_WORLD, xrange, nullptr, 0, &x, nullptr, 0, &y) != 0)
      s.fail("shmem_team_split_2d", "0", "nonzero");
    const int xs = std::min(xrange, s.n - (s.me / xrange) * xrange);
    const int ys = (s.n - s.me % xrange + xrange - 1) / xrange;
    s.check(shmem_team_my_pe(x) == s.me % xrange && shmem_team_n_pes(x) == xs, kTeams, "shmem_team_split_2d x team",
            "rank " + std::to_string(s.me % xrange) + " of " + std::to_string(xs),
            "rank " + std::to_string(shmem_team_my_pe(x)) + " of " + std::to_string(shmem_team_n_pes(x)));
    s.check(shmem_team_my_pe(y) == s.me / xrange && shmem_team_n_pes(y) == ys, kTeams, "shmem_team_split_2d y team",
            "rank " + std::to_string(s.me / xrange) + " of " + std::to_string(ys),
            "rank " + std::to_string(shmem_team_my_pe(y)) + " of " + std::to_string(shmem_team_n_pes(y)));
    Rng gx = g, gy = g;  // each team draws its own (identical within the team) decisions
    gy.next();
    team_collective(s, gx, x, kTeams);
    // Every x team is done with the buffers before a y team writes them (a PE's y peers may still be in
    // their own x collective otherwise).
    shmem_barrier_all();
    team_collective(s, gy, y, kTeams);
    shmem_team_destroy(x);
    shmem_team_destroy(y);
  }
}

}  // namespace tessera::soak
