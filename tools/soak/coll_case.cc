// CollCase: random collective calls and their expected results (coll_case.h).
#include "coll_case.h"

#include <algorithm>
#include <numeric>

#include "coll/reduce/reference.h"

namespace tessera::soak {

using coll::DType;
using coll::Kind;
using coll::Op;

namespace {

constexpr unsigned char kGuard = 0xc3;  // fills recv before the call: bytes outside the result must keep it

uint64_t rank_key(uint64_t k, int q) { return mix(k ^ (static_cast<uint64_t>(q + 1) * 0x9fb21c651e98df25ull)); }

std::vector<char> pattern(uint64_t k, int q, size_t bytes) {
  std::vector<char> v(bytes);
  fill_pattern(v.data(), bytes, rank_key(k, q));
  return v;
}

// Element counts per rank for v variants (some zero), and packed displacements with random gaps.
std::vector<size_t> draw_counts(Rng& g, int n, size_t max) {
  std::vector<size_t> c(n);
  for (size_t& x : c) x = g.pick(6) == 0 ? 0 : g.below(max + 1);
  return c;
}
std::vector<size_t> draw_displs(Rng& g, const std::vector<size_t>& counts) {
  std::vector<size_t> d(counts.size());
  size_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    at += g.below(4);
    d[i] = at;
    at += counts[i];
  }
  return d;
}
size_t extent(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t e = 0;
  for (size_t i = 0; i < counts.size(); ++i) e = std::max(e, displs[i] + counts[i]);
  return e;
}

}  // namespace

coll::Args CollCase::args(bool symmetric) const {
  coll::Args a;
  a.send = send;
  a.recv = recv;
  a.count = count;
  a.dtype = t;
  a.op = op;
  a.root = root;
  a.scounts = scounts.empty() ? nullptr : scounts.data();
  a.sdispls = sdispls.empty() ? nullptr : sdispls.data();
  a.rcounts = rcounts.empty() ? nullptr : rcounts.data();
  a.rdispls = rdispls.empty() ? nullptr : rdispls.data();
  a.symmetric = symmetric;
  return a;
}

std::string CollCase::describe() const {
  return std::string(coll::kind_name(kind)) + " " + coll::dtype_name(t) +
         ((coll::kind_flags(kind) & coll::kReducing) ? std::string(" ") + coll::op_name(op) : "") + " count " +
         std::to_string(count) + ((coll::kind_flags(kind) & coll::kRooted) ? " root " + std::to_string(root) : "") +
         (inplace ? " in place" : "");
}

CollCase make_case(Soak& s, Rng& g, Kind kind, int r, int n, bool symmetric, size_t max_bytes) {
  CollCase c;
  c.kind = kind;
  const uint8_t flags = coll::kind_flags(kind);
  const bool reducing = flags & coll::kReducing;
  const bool scan = kind == Kind::kInscan || kind == Kind::kExscan;
  // Type and operator. Above 8 ranks the reference inputs are exact only in wide types and without prod.
  for (;;) {
    c.t = static_cast<DType>(g.pick(coll::kNumDTypes));
    c.op = static_cast<Op>(g.pick(coll::kNumOps));
    if (scan && (c.op == Op::kAvg || c.op >= Op::kBand)) continue;  // scans take sum, prod, min, max
    if (reducing && !coll::op_applies(c.t, c.op)) continue;
    if (reducing && n > 8 && (coll::dtype_size(c.t) < 4 || c.op == Op::kProd)) continue;
    break;
  }
  if (!reducing) c.op = Op::kSum;
  const size_t es = coll::dtype_size(c.t);
  const bool gathered = kind == Kind::kAllgather || kind == Kind::kGather || kind == Kind::kScatter ||
                        kind == Kind::kAlltoall || kind == Kind::kReduceScatter;
  const size_t max_elems = std::max<size_t>(1, max_bytes / es / (gathered ? static_cast<size_t>(n) : 1));
  c.count = g.pick(16) == 0 ? 0 : g.log_size(1, max_elems);
  c.root = (flags & coll::kRooted) ? g.pick(n) : 0;
  const uint64_t k = g.next();
  const unsigned seed = static_cast<unsigned>(k % 1000);
  const bool can_inplace = !symmetric && (kind == Kind::kAllreduce || kind == Kind::kBroadcast ||
                                          kind == Kind::kReduce || kind == Kind::kReduceScatter ||
                                          kind == Kind::kAllgather || kind == Kind::kAlltoall || scan);
  c.inplace = can_inplace && g.pick(3) == 0;

  // Sizes of the send and receive buffers (elements) and the v-variant layouts.
  size_t send_elems = c.count, recv_elems = c.count;
  const size_t nn = static_cast<size_t>(n);
  switch (kind) {
    case Kind::kReduceScatter: send_elems = c.count * nn; break;
    case Kind::kAllgather: case Kind::kGather: recv_elems = c.count * nn; break;
    case Kind::kScatter: send_elems = c.count * nn; break;
    case Kind::kAlltoall: send_elems = recv_elems = c.count * nn; break;
    case Kind::kReduceScatterv:
      c.rcounts = draw_counts(g, n, max_elems / nn);
      send_elems = std::accumulate(c.rcounts.begin(), c.rcounts.end(), size_t{0});
      c.count = recv_elems = c.rcounts[r];
      break;
    case Kind::kAllgatherv: case Kind::kGatherv:
      c.rcounts = draw_counts(g, n, max_elems / nn);
      c.rdispls = draw_displs(g, c.rcounts);
      c.count = send_elems = c.rcounts[r];
      recv_elems = extent(c.rcounts, c.rdispls);
      break;
    case Kind::kScatterv:
      c.scounts = draw_counts(g, n, max_elems / nn);
      c.sdispls = draw_displs(g, c.scounts);
      send_elems = extent(c.scounts, c.sdispls);
      c.count = recv_elems = c.scounts[r];
      break;
    case Kind::kAlltoallv: {
      // counts[q][j]: what q sends to j; every rank draws the whole matrix and every rank's layouts.
      std::vector<std::vector<size_t>> cnt(n), sd(n), rd(n);
      for (int q = 0; q < n; ++q) cnt[q] = draw_counts(g, n, max_elems / nn);
      for (int q = 0; q < n; ++q) sd[q] = draw_displs(g, cnt[q]);
      for (int q = 0; q < n; ++q) {
        std::vector<size_t> in(n);
        for (int j = 0; j < n; ++j) in[j] = cnt[j][q];
        rd[q] = draw_displs(g, in);
        if (q == r) c.rcounts = in;
      }
      c.scounts = cnt[r];
      c.sdispls = sd[r];
      c.rdispls = rd[r];
      c.count = 0;
      send_elems = extent(c.scounts, c.sdispls);
      recv_elems = extent(c.rcounts, c.rdispls);
      // Expected: block from q at rdispls[q] is q's elements [sd[q][r], + cnt[q][r]).
      c.expect.assign(std::max<size_t>(recv_elems, 1) * es, static_cast<char>(kGuard));
      for (int q = 0; q < n; ++q) {
        const std::vector<char> p = pattern(k, q, extent(cnt[q], sd[q]) * es);
        if (cnt[q][r])
          std::memcpy(c.expect.data() + c.rdispls[q] * es, p.data() + sd[q][r] * es, cnt[q][r] * es);
      }
      break;
    }
    default: break;
  }

  // Buffers.
  const size_t sbytes = std::max<size_t>(send_elems, 1) * es, rbytes = std::max<size_t>(recv_elems, 1) * es;
  char* sbuf;
  if (symmetric) {
    sbuf = s.a.coll_send;
    c.recv = s.a.coll_recv;
  } else {
    c.own_send.resize(sbytes);
    c.own_recv.resize(std::max(rbytes, c.inplace ? sbytes : 0));
    sbuf = c.own_send.data();
    c.recv = c.own_recv.data();
  }
  std::memset(c.recv, kGuard, std::max(rbytes, c.inplace ? sbytes : 0));
  // My input.
  if (reducing) {
    for (size_t i = 0; i < send_elems; ++i) coll::ref::store(sbuf, i, c.t, coll::ref::input_value(r, i, c.t, c.op, seed));
  } else if (kind != Kind::kBarrier) {
    fill_pattern(sbuf, send_elems * es, rank_key(k, r));
  }
  // Expected result on this rank (bytes of recv checked: recv_bytes).
  c.recv_bytes = recv_elems * es;
  auto red_expect = [&](size_t elems, size_t first, int members) {
    c.expect.assign(std::max<size_t>(elems, 1) * es, 0);
    if (members > 0)
      for (size_t i = 0; i < elems; ++i) coll::ref::expected(c.expect.data() + i * es, first + i, c.t, c.op, members, seed);
  };
  switch (kind) {
    case Kind::kAllreduce: red_expect(c.count, 0, n); break;
    case Kind::kReduce:
      if (r == c.root) red_expect(c.count, 0, n);
      else c.recv_bytes = 0;
      break;
    case Kind::kReduceScatter: red_expect(c.count, static_cast<size_t>(r) * c.count, n); break;
    case Kind::kReduceScatterv: {
      size_t off = 0;
      for (int q = 0; q < r; ++q) off += c.rcounts[q];
      red_expect(c.count, off, n);
      break;
    }
    case Kind::kInscan: red_expect(c.count, 0, r + 1); break;
    case Kind::kExscan: red_expect(c.count, 0, r); break;
    case Kind::kBroadcast: c.expect = pattern(k, c.root, c.count * es); break;
    case Kind::kAllgather: case Kind::kGather:
      if (kind == Kind::kGather && r != c.root) {
        c.recv_bytes = 0;
        break;
      }
      for (int q = 0; q < n; ++q) {
        const std::vector<char> p = pattern(k, q, c.count * es);
        c.expect.insert(c.expect.end(), p.begin(), p.end());
      }
      break;
    case Kind::kScatter: {
      const std::vector<char> p = pattern(k, c.root, c.count * nn * es);
      c.expect.assign(p.begin() + static_cast<ptrdiff_t>(c.count * r * es),
                      p.begin() + static_cast<ptrdiff_t>(c.count * (r + 1) * es));
      break;
    }
    case Kind::kAlltoall:
      for (int q = 0; q < n; ++q) {
        const std::vector<char> p = pattern(k, q, c.count * nn * es);
        c.expect.insert(c.expect.end(), p.begin() + static_cast<ptrdiff_t>(c.count * r * es),
                        p.begin() + static_cast<ptrdiff_t>(c.count * (r + 1) * es));
      }
      break;
    case Kind::kAllgatherv: case Kind::kGatherv:
      if (kind == Kind::kGatherv && r != c.root) {
        c.recv_bytes = 0;
        break;
      }
      c.expect.assign(std::max<size_t>(recv_elems, 1) * es, static_cast<char>(kGuard));
      for (int q = 0; q < n; ++q) {
        const std::vector<char> p = pattern(k, q, c.rcounts[q] * es);
        if (!p.empty()) std::memcpy(c.expect.data() + c.rdispls[q] * es, p.data(), p.size());
      }
      break;
    case Kind::kScatterv: {
      const std::vector<char> p = pattern(k, c.root, send_elems * es);
      c.expect.assign(p.begin() + static_cast<ptrdiff_t>(c.sdispls[r] * es),
                      p.begin() + static_cast<ptrdiff_t>((c.sdispls[r] + c.scounts[r]) * es));
      break;
    }
    default: break;
  }
  // Long double: 10 significant bytes of 16. The reference's padding may differ from the kernel's, so the
  // padding of the expected value is not compared (verify_case compares values for this type).
  // In place: the input moves into the receive buffer, at the offset the convention names. (No copy of
  // nothing: a count of 0 may come with null buffers, which memcpy must not be given.)
  c.send = sbuf;
  if (c.inplace) {
    switch (kind) {
      case Kind::kAllgather:
        if (c.count) std::memcpy(c.recv + static_cast<size_t>(r) * c.count * es, sbuf, c.count * es);
        c.send = c.recv + static_cast<size_t>(r) * c.count * es;
        break;
      case Kind::kReduceScatter:
        if (send_elems) std::memcpy(c.recv, sbuf, send_elems * es);
        c.send = c.recv;
        c.recv = c.recv + static_cast<size_t>(r) * c.count * es;
        break;
      default:
        if (send_elems) std::memcpy(c.recv, sbuf, send_elems * es);
        c.send = c.recv;
    }
  }
  if (s.inject() && !c.expect.empty() && c.recv_bytes > 0) c.expect[0] ^= 1;
  return c;
}

void verify_case(Soak& s, const CollCase& c, int cat, const std::string& how) {
  const std::string what = how + ": " + c.describe();
  if (c.recv_bytes == 0) return;  // nothing lands on this rank (a non-root of reduce/gather): nothing to count
  if (c.t == DType::kLongDouble && (coll::kind_flags(c.kind) & coll::kReducing)) {
    for (size_t i = 0; i < c.recv_bytes / 16; ++i) {
      const double got = coll::ref::load(c.recv, i, c.t), want = coll::ref::load(c.expect.data(), i, c.t);
      if (got != want) s.fail(what.c_str(), "element " + std::to_string(i) + " = " + std::to_string(want), std::to_string(got));
    }
    s.count(cat);
    return;
  }
  s.check_bytes(c.recv, c.expect.data(), c.recv_bytes, cat, what.c_str());
}

}  // namespace tessera::soak
