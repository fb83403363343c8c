// Collective steps: the C++ Comm API (every collective, blocking), the collective layer with an algorithm
// forced per call (every algorithm of every collective, through dispatch() as tessera-perf --algo does),
// and comm streams with events. Verified by verify_case against results computed from the seed.
#include <tessera/coll.hpp>

#include <map>
#include <memory>
#include <optional>

#include "coll/dispatch.h"
#include "coll/handle.h"
#include "coll_case.h"

namespace tessera::soak {

using coll::Kind;

namespace {

// The world communicator, made at the first collective step (collective: every PE reaches it at the same
// step) and destroyed by coll_teardown() before shmem_finalize.
std::optional<coll::Comm>& world_slot() {
  static std::optional<coll::Comm> c;
  return c;
}
coll::Comm& world() {
  if (!world_slot()) world_slot().emplace(coll::Comm::world());
  return *world_slot();
}

// How many times each (collective, algorithm) was forced; same on every PE (the choices are shared).
std::map<std::string, uint64_t>& forced_counts() {
  static std::map<std::string, uint64_t> m;
  return m;
}

coll::DataType pub(coll::DType t) { return static_cast<coll::DataType>(t); }
coll::RedOp pub(coll::Op o) { return static_cast<coll::RedOp>(o); }

// The barrier's check: a put completed (quiet) before the barrier is visible to its target after it.
struct BarrierCheck {
  Soak& s;
  int to, from;
  explicit BarrierCheck(Soak& so, int d) : s(so), to((so.me + d) % so.n), from((so.me - d + so.n) % so.n) {
    s.a.slots[from] = 0;
  }
  void before() {
    shmem_int64_p(s.a.slots + s.me, static_cast<int64_t>(s.key(s.me, 20) | 1), to);
    shmem_quiet();
  }
  void after(int cat, const char* what) {
    const int64_t want = static_cast<int64_t>(s.key(from, 20) | 1);
    s.check(s.a.slots[from] == want, cat, what, hex(want), hex(s.a.slots[from]));
  }
};

// The blocking C++ API call for a case.
void run_comm(coll::Comm& c, CollCase& k) {
  const auto t = pub(k.t);
  switch (k.kind) {
    case Kind::kAllreduce: c.allreduce(k.send, k.recv, k.count, t, pub(k.op)); break;
    case Kind::kReduceScatter: c.reduce_scatter(k.send, k.recv, k.count, t, pub(k.op)); break;
    case Kind::kReduceScatterv: c.reduce_scatterv(k.send, k.recv, k.rcounts.data(), t, pub(k.op)); break;
    case Kind::kAllgather: c.allgather(k.send, k.recv, k.count, t); break;
    case Kind::kAllgatherv: c.allgatherv(k.send, k.count, k.recv, k.rcounts.data(), k.rdispls.data(), t); break;
    case Kind::kBroadcast: c.broadcast(k.send, k.recv, k.count, t, k.root); break;
    case Kind::kReduce: c.reduce(k.send, k.recv, k.count, t, pub(k.op), k.root); break;
    case Kind::kGather: c.gather(k.send, k.recv, k.count, t, k.root); break;
    case Kind::kScatter: c.scatter(k.send, k.recv, k.count, t, k.root); break;
    case Kind::kGatherv: c.gatherv(k.send, k.count, k.recv, k.rcounts.data(), k.rdispls.data(), t, k.root); break;
    case Kind::kScatterv: c.scatterv(k.send, k.scounts.data(), k.sdispls.data(), k.recv, k.count, t, k.root); break;
    case Kind::kAlltoall: c.alltoall(k.send, k.recv, k.count, t); break;
    case Kind::kAlltoallv:
      c.alltoallv(k.send, k.scounts.data(), k.sdispls.data(), k.recv, k.rcounts.data(), k.rdispls.data(), t);
      break;
    default: break;
  }
}

// The collectives of the Comm API (barrier and send/recv apart).
const Kind kCommKinds[] = {Kind::kAllreduce,  Kind::kReduceScatter, Kind::kReduceScatterv, Kind::kAllgather,
                           Kind::kAllgatherv, Kind::kBroadcast,     Kind::kReduce,         Kind::kGather,
                           Kind::kScatter,    Kind::kGatherv,       Kind::kScatterv,       Kind::kAlltoall,
                           Kind::kAlltoallv};
// The stream overloads of the Comm API.
const Kind kStreamKinds[] = {Kind::kAllreduce, Kind::kReduceScatter, Kind::kAllgather,
                             Kind::kBroadcast, Kind::kReduce,        Kind::kAlltoall};

}  // namespace

void coll_teardown() { world_slot().reset(); }

std::string coll_coverage() {
  std::string out;
  for (const auto& [name, n] : forced_counts()) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return out;
}

void comm_collective(Soak& s, Rng& g, coll::Comm& c, int cat) {
  comm_collective(s, g, c, kCommKinds[g.pick(static_cast<int>(std::size(kCommKinds)))], cat);
}

void comm_collective(Soak& s, Rng& g, coll::Comm& c, Kind kind, int cat) {
  CollCase k = make_case(s, g, kind, c.rank(), c.size(), false, 256 << 10);
  run_comm(c, k);
  verify_case(s, k, cat, "Comm");
}

void group_sendrecv(Soak& s, Rng& g, coll::Comm& c, int cat) {
  // Every rank sends to rank + d and receives from rank - d.
  const int n = c.size(), r = c.rank();
  const int d = n == 1 ? 0 : 1 + g.pick(n - 1);
  const size_t bytes = g.log_size(1, 64 << 10);
  const int to = (r + d) % n, from = (r - d + n) % n;
  std::vector<char> out(bytes), in(bytes), want(bytes);
  fill_pattern(out.data(), bytes, s.key(r, 21));
  fill_pattern(want.data(), bytes, s.key(from, 21));
  if (n > 1) {
    coll::Group grp;  // its end runs the pair (and throws PeerFailure in resilient mode if a peer failed)
    c.send(out.data(), bytes, coll::DataType::kUint8, to);
    c.recv(in.data(), bytes, coll::DataType::kUint8, from);
  } else {
    in = out;
  }
  s.check_bytes(in.data(), want.data(), bytes, cat, "Comm::send/recv in a Group");
}

void recv_from_any(Soak& s, Rng& g, coll::Comm& c, int cat) {
  // Every other rank sends one message to a root, which takes them in whatever order they come.
  const int n = c.size(), r = c.rank();
  const int root = g.pick(n);
  const size_t count = 1 + g.below(256);
  if (r != root) {
    std::vector<int64_t> v(count);
    fill_pattern(v.data(), count * 8, s.key(r, 22));
    c.send(v.data(), count, coll::DataType::kInt64, root);  // verified by the root, which counts it
  } else {
    std::vector<int> seen(static_cast<size_t>(n), 0);
    std::vector<int64_t> v(count), want(count);
    for (int i = 0; i < n - 1; ++i) {
      const int from = c.recv_any(v.data(), count, coll::DataType::kInt64);
      if (from < 0 || from >= n || from == root || seen[static_cast<size_t>(from)]++)
        s.fail("Comm::recv_any", "a rank not yet received from", std::to_string(from));
      fill_pattern(want.data(), count * 8, s.key(from, 22));
      s.check_bytes(v.data(), want.data(), count * 8, cat, "Comm::recv_any");
    }
  }
}

void step_comm_coll(Soak& s) {
  Rng g = s.shared();
  g.next();
  coll::Comm& c = world();
  const int what = g.pick(static_cast<int>(std::size(kCommKinds)) + 4);
  if (what < static_cast<int>(std::size(kCommKinds))) {
    comm_collective(s, g, c, kCommKinds[what], kCommColl);
  } else if (what == static_cast<int>(std::size(kCommKinds))) {
    BarrierCheck b(s, s.n == 1 ? 0 : 1 + g.pick(s.n - 1));
    shmem_barrier_all();  // the slot reset above is done everywhere before anyone writes it
    b.before();
    c.barrier();
    b.after(kCommColl, "Comm::barrier (a put completed before it is seen after it)");
  } else if (what == static_cast<int>(std::size(kCommKinds)) + 1) {
    group_sendrecv(s, g, c, kCommColl);
  } else if (what == static_cast<int>(std::size(kCommKinds)) + 2) {
    // split: colors (some negative: no communicator) and keys drawn for every rank; members are ordered by
    // key then by parent rank. Checked: size, rank, and an allreduce of the members' parent ranks.
    const int colors = 1 + g.pick(3);
    std::vector<int> color(s.n), key(s.n);
    for (int q = 0; q < s.n; ++q) {
      color[q] = g.pick(colors + 1) - 1;
      key[q] = g.pick(4);
    }
    coll::Comm sub = c.split(color[s.me], key[s.me]);
    if (color[s.me] < 0) {
      s.check(!sub, kCommColl, "Comm::split with a negative color", "an empty Comm", "a communicator");
      return;
    }
    int size = 0, rank = 0;
    int64_t sum = 0;
    for (int q = 0; q < s.n; ++q) {
      if (color[q] != color[s.me]) continue;
      ++size;
      sum += q;
      if (key[q] < key[s.me] || (key[q] == key[s.me] && q < s.me)) ++rank;
    }
    s.check(sub.size() == size && sub.rank() == rank, kCommColl, "Comm::split",
            "rank " + std::to_string(rank) + " of " + std::to_string(size),
            "rank " + std::to_string(sub.rank()) + " of " + std::to_string(sub.size()));
    int64_t mine = s.me, total = -1;
    sub.allreduce(&mine, &total, 1, coll::DataType::kInt64, coll::RedOp::kSum);
    s.check(total == sum, kCommColl, "Comm::split then allreduce", std::to_string(sum), std::to_string(total));
  } else {
    recv_from_any(s, g, c, kCommColl);
  }
}

// Every algorithm: the shared generator picks a collective and one of its algorithms; the call is forced to
// it when the algorithm supports the shape (else the library's own choice runs, and is verified the same).
void step_algo(Soak& s) {
  Rng g = s.shared();
  g.next();
  coll::Communicator& comm = *world().handle()->c;
  std::vector<const coll::Algorithm*> algos;
  const int kinds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16};  // every kind but sendrecv
  const Kind kind = static_cast<Kind>(kinds[g.pick(static_cast<int>(std::size(kinds)))]);
  for (const coll::Algorithm& a : coll::algorithms())
    if (a.kind == kind) algos.push_back(&a);
  const coll::Algorithm* algo = algos[g.pick(static_cast<int>(algos.size()))];
  const bool symmetric = g.pick(3) == 0 || std::string(algo->name) == "symmetric";
  // Small payloads often, so that the LL protocol (a few hundred bytes) is drawn as well as chunked ones.
  const size_t max_bytes = g.coin() ? 1024 : 256 << 10;
  if (kind == Kind::kBarrier) {
    BarrierCheck b(s, s.n == 1 ? 0 : 1 + g.pick(s.n - 1));
    shmem_barrier_all();
    coll::Shape sh = coll::make_shape(comm, kind, 0);
    const coll::Algorithm* f = fits(*algo, sh) ? algo : nullptr;
    b.before();
    const Status st = coll::dispatch(comm, kind, coll::Args{}, f);
    if (!st.is_ok()) s.fail("dispatch barrier", "ok", st.message());
    ++forced_counts()[std::string("barrier/") + (f ? f->name : "auto")];
    b.after(kAlgo, (std::string("barrier/") + (f ? f->name : "auto")).c_str());
    return;
  }
  CollCase k = make_case(s, g, kind, comm.rank, comm.size, symmetric, max_bytes);
  if (symmetric) shmem_barrier_all();  // peers may read and write my symmetric buffers once the call starts
  // The shape as dispatch sees it: per-rank bytes (v variants: the average; counts only some ranks know: 0).
  // Selection's own shape decides in the end: a forced algorithm it finds unsupported is reported as an error
  // before anything is published, identically on every rank, and the call then runs on the library's choice.
  size_t per_rank = k.count;
  if (kind == Kind::kAllgatherv || kind == Kind::kReduceScatterv) {
    size_t total = 0;
    for (size_t x : k.rcounts) total += x;
    per_rank = total / static_cast<size_t>(comm.size);
  }
  if (kind == Kind::kAlltoallv || kind == Kind::kGatherv || kind == Kind::kScatterv) per_rank = 0;
  coll::Shape sh = coll::make_shape(comm, kind, per_rank * coll::dtype_size(k.t));
  sh.dtype = k.t;
  sh.op = k.op;
  sh.symmetric = symmetric;
  const coll::Algorithm* f = fits(*algo, sh) ? algo : nullptr;
  Status st = coll::dispatch(comm, kind, k.args(symmetric), f);
  if (!st.is_ok() && f && st.code() == Code::kUnsupported) {
    f = nullptr;
    st = coll::dispatch(comm, kind, k.args(symmetric), nullptr);
  }
  const std::string how = std::string("dispatch ") + (f ? "forced " + std::string(f->name) : "auto") +
                          (symmetric ? " symmetric" : "");
  if (!st.is_ok()) s.fail(how.c_str(), "ok", st.message());
  ++forced_counts()[std::string(coll::kind_name(kind)) + "/" + (f ? f->name : "auto")];
  verify_case(s, k, kAlgo, how);
  if (symmetric) shmem_barrier_all();  // nobody reads my symmetric buffers any more
}

// Comm streams: a few collectives enqueued on a stream with events between them and a host item that
// checks order, then waited for (by event or by stream) and verified.
void step_stream(Soak& s) {
  Rng g = s.shared();
  g.next();
  stream_collectives(s, g, world(), kStream, true);
}

void stream_collectives(Soak& s, Rng& g, coll::Comm& c, int cat, bool barrier_check) {
  coll::Stream st;
  const int items = 1 + g.pick(4);
  std::vector<std::unique_ptr<CollCase>> cases;
  std::vector<coll::Event> events;
  std::vector<int> order;
  const int d = c.size() == 1 ? 0 : 1 + g.pick(c.size() - 1);
  const bool with_barrier = g.coin() && barrier_check;
  std::optional<BarrierCheck> b;
  if (barrier_check) {
    b.emplace(s, d);
    shmem_barrier_all();
  }
  for (int i = 0; i < items; ++i) {
    const Kind kind = kStreamKinds[g.pick(static_cast<int>(std::size(kStreamKinds)))];
    cases.push_back(std::make_unique<CollCase>(make_case(s, g, kind, c.rank(), c.size(), false, 64 << 10)));
    CollCase& k = *cases.back();
    const auto t = pub(k.t);
    switch (kind) {
      case Kind::kAllreduce: c.allreduce(k.send, k.recv, k.count, t, pub(k.op), st); break;
      case Kind::kReduceScatter: c.reduce_scatter(k.send, k.recv, k.count, t, pub(k.op), st); break;
      case Kind::kAllgather: c.allgather(k.send, k.recv, k.count, t, st); break;
      case Kind::kBroadcast: c.broadcast(k.send, k.recv, k.count, t, k.root, st); break;
      case Kind::kReduce: c.reduce(k.send, k.recv, k.count, t, pub(k.op), k.root, st); break;
      default: c.alltoall(k.send, k.recv, k.count, t, st); break;
    }
    st.enqueue("soak order " + std::to_string(i), [&order, i] { order.push_back(i); });
    events.emplace_back();
    events.back().record(st);
  }
  if (with_barrier) {
    b->before();  // on this thread: the put is complete before the barrier item is even enqueued
    c.barrier(st);
  }
  // Wait: each event in turn, or the stream at once.
  if (g.coin()) {
    for (coll::Event& e : events) e.synchronize();
    st.synchronize();
  } else {
    st.synchronize();
    for (coll::Event& e : events)
      if (!e.query()) s.fail("Event::query after Stream::synchronize", "complete", "not complete");
  }
  for (int i = 0; i < items; ++i) {
    if (order.size() <= static_cast<size_t>(i) || order[i] != i)
      s.fail("stream order", "item " + std::to_string(i), order.size() <= static_cast<size_t>(i) ? "missing" : std::to_string(order[i]));
    verify_case(s, *cases[i], cat, "Comm on a stream");
  }
  if (with_barrier) b->after(cat, "Comm::barrier on a stream");
}

}  // namespace tessera::soak
