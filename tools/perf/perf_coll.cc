// tessera-perf <collective>: nccl-tests style sweeps of the collectives.
//   tessera-run -n 4 tessera-perf allreduce -b 8 -e 64M -f 4 -c 1
// Columns: size, count, type, redop, root, then time (us), algbw, busbw (GB/s) and #wrong for out-of-place
// and in-place runs, as nccl-tests prints them, and the average busbw at the end. busbw factors: allreduce
// 2(n-1)/n; reduce_scatter, allgather, alltoall (n-1)/n; broadcast, reduce, gather, scatter, sendrecv 1.
// size is the largest buffer of a rank in bytes (allgather: the output, reduce_scatter: the input).
// Time is the slowest rank's average over -n iterations after -w warm-up ones.
#include <shmem.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/config.h"
#include "coll/algo.h"
#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/p2p.h"
#include "coll/reduce/reference.h"
#include "coll/select/select.h"
#include "pgas/team.h"
#include "perf/perf.h"

namespace tessera::perf {
namespace {
using namespace tessera::coll;

struct Opts {
  size_t min_bytes = 8, max_bytes = 64 << 20;
  double factor = 2;
  size_t step = 0;
  int iters = 20, warmup = 5;
  int check = 0;
  DType dtype = DType::kFloat32;
  Op op = Op::kSum;
  int root = 0;
  const Algorithm* algo = nullptr;
  bool json = false;
  bool inplace = true;
  bool symmetric = false;  // buffers from the symmetric heap (the collectives' zero-copy path)
};

[[noreturn]] void usage(const char* prog, const std::string& err) {
  if (!err.empty()) std::fprintf(stderr, "%s: %s\n", prog, err.c_str());
  std::fprintf(stderr,
               "usage: tessera-run -n N %s [-b min] [-e max] [-f factor | -i step] [-n iters] [-w warmup] [-c 0|1]\n"
               "       [-d type] [-o op] [-r root] [-a algorithm] [-z 0|1 (in-place runs)] [--json]\n"
               "  sizes take K/M/G suffixes; types: int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32\n"
               "  float64; ops: sum prod min max avg; algorithms: tessera-info --coll <collective>\n",
               prog);
  std::exit(2);
}

size_t parse_size(const char* prog, const char* opt, const char* v) {
  auto r = config::parse_size(opt, v);
  if (!r.is_ok()) usage(prog, r.status().message());
  return r.value();
}

Opts parse(Kind kind, int argc, char** argv) {
  Opts o;
  const char* prog = argv[0];
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage(prog, a + " needs a value");
      return argv[++i];
    };
    if (a == "-b") o.min_bytes = parse_size(prog, "-b", val());
    else if (a == "-e") o.max_bytes = parse_size(prog, "-e", val());
    else if (a == "-f") o.factor = std::atof(val());
    else if (a == "-i") o.step = parse_size(prog, "-i", val());
    else if (a == "-n") o.iters = std::atoi(val());
    else if (a == "-w") o.warmup = std::atoi(val());
    else if (a == "-c") o.check = std::atoi(val());
    else if (a == "-z") o.inplace = std::atoi(val()) != 0;
    else if (a == "-r") o.root = std::atoi(val());
    else if (a == "-d") {
      auto t = parse_dtype(val());
      if (!t) usage(prog, std::string("unknown type ") + argv[i]);
      o.dtype = *t;
    } else if (a == "-o") {
      auto p = parse_op(val());
      if (!p) usage(prog, std::string("unknown op ") + argv[i]);
      o.op = *p;
    } else if (a == "-a" || a == "--algo") {
      const char* name = val();
      o.algo = find_algorithm(kind, name);
      if (!o.algo) usage(prog, std::string("no algorithm ") + name + " for " + kind_name(kind));
    } else if (a == "--json") o.json = true;
    else if (a == "--symmetric") o.symmetric = true;
    else if (a == "-h" || a == "--help") usage(prog, "");
    else usage(prog, "unknown option " + a);
  }
  if (o.factor <= 1 && !o.step) usage(prog, "-f must be > 1 (or give -i)");
  if (o.iters < 1) usage(prog, "-n must be at least 1");
  return o;
}

double bus_factor(Kind k, int n) {
  switch (k) {
    case Kind::kAllreduce: return n > 1 ? 2.0 * (n - 1) / n : 1;
    case Kind::kReduceScatter: case Kind::kAllgather: case Kind::kAlltoall: return n > 1 ? double(n - 1) / n : 1;
    default: return 1;
  }
}

bool has_op(Kind k) { return k == Kind::kAllreduce || k == Kind::kReduceScatter || k == Kind::kReduce; }
bool has_root(Kind k) { return k == Kind::kBroadcast || k == Kind::kReduce || k == Kind::kGather || k == Kind::kScatter; }

// Element counts of the send and receive buffers for a per-rank `count` (Args::count).
void buffer_elems(Kind k, size_t count, int n, size_t* s, size_t* r) {
  size_t N = static_cast<size_t>(n);
  switch (k) {
    case Kind::kReduceScatter: *s = count * N; *r = count; break;
    case Kind::kAllgather: case Kind::kGather: *s = count; *r = count * N; break;
    case Kind::kScatter: *s = count * N; *r = count; break;
    case Kind::kAlltoall: *s = count * N; *r = count * N; break;
    default: *s = count; *r = count; break;
  }
}

// A benchmark buffer: private memory, or (--symmetric) symmetric heap memory, which every rank allocates
// alike (the sizes are the same on every rank, and fill() runs in step on all of them).
struct Mem {
  bool sym = false;
  std::vector<char> v;
  char* p = nullptr;
  size_t cap = 0;
  void assign(size_t bytes, char value) {
    if (!sym) {
      v.assign(bytes, value);
      p = v.data();
      return;
    }
    if (bytes > cap) {
      if (p) shmem_free(p);
      p = static_cast<char*>(shmem_malloc(bytes));
      cap = bytes;
    }
    if (bytes) std::memset(p, value, bytes);
  }
  char* data() { return p; }
  const char* data() const { return p; }
};

struct Bench {
  Communicator* c;
  Kind kind;
  Opts o;
  Mem sbuf, rbuf;

  void fill(size_t count) {
    size_t se, re;
    buffer_elems(kind, count, c->size, &se, &re);
    size_t es = dtype_size(o.dtype);
    sbuf.assign(se * es, 0);
    rbuf.assign(std::max(se, re) * es, 0);
    for (size_t i = 0; i < se; ++i) ref::store(sbuf.data(), i, o.dtype, input_value(i, count));
  }
  // Input value of element i of my send buffer (as a function of the global position for checks).
  double input_value(size_t i, size_t count) const {
    switch (kind) {
      case Kind::kAllreduce: case Kind::kReduce: return ref::input_value(c->rank, i, o.dtype, o.op);
      case Kind::kReduceScatter: return ref::input_value(c->rank, i, o.dtype, o.op);
      default: return static_cast<double>((c->rank * 31 + i * 7) % 101);
    }
  }
  // Wrong elements in the result of one run (out of place: rbuf; in place: where the result lives).
  size_t check(const char* out, size_t count) const {
    const int n = c->size, r = c->rank;
    const size_t es = dtype_size(o.dtype);
    std::vector<char> e(16);
    size_t wrong = 0;
    auto cmp = [&](size_t at, const void* expect) { wrong += std::memcmp(out + at * es, expect, es) != 0; };
    auto other = [&](int rank, size_t i) { return static_cast<double>((rank * 31 + i * 7) % 101); };
    switch (kind) {
      case Kind::kAllreduce:
        for (size_t i = 0; i < count; ++i) { ref::expected(e.data(), i, o.dtype, o.op, n); cmp(i, e.data()); }
        break;
      case Kind::kReduce:
        if (r == o.root)
          for (size_t i = 0; i < count; ++i) { ref::expected(e.data(), i, o.dtype, o.op, n); cmp(i, e.data()); }
        break;
      case Kind::kReduceScatter:
        for (size_t i = 0; i < count; ++i) { ref::expected(e.data(), r * count + i, o.dtype, o.op, n); cmp(i, e.data()); }
        break;
      case Kind::kAllgather:
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < count; ++i) { ref::store(e.data(), 0, o.dtype, other(m, i)); cmp(m * count + i, e.data()); }
        break;
      case Kind::kGather:
        if (r == o.root)
          for (int m = 0; m < n; ++m)
            for (size_t i = 0; i < count; ++i) { ref::store(e.data(), 0, o.dtype, other(m, i)); cmp(m * count + i, e.data()); }
        break;
      case Kind::kBroadcast:
        for (size_t i = 0; i < count; ++i) { ref::store(e.data(), 0, o.dtype, other(o.root, i)); cmp(i, e.data()); }
        break;
      case Kind::kScatter:
        for (size_t i = 0; i < count; ++i) { ref::store(e.data(), 0, o.dtype, other(o.root, r * count + i)); cmp(i, e.data()); }
        break;
      case Kind::kAlltoall:
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < count; ++i) { ref::store(e.data(), 0, o.dtype, other(m, r * count + i)); cmp(m * count + i, e.data()); }
        break;
      default: break;
    }
    return wrong;
  }

  void run_once(const void* s, void* r, size_t count) {
    Args a;
    a.send = s;
    a.recv = r;
    a.count = count;
    a.dtype = o.dtype;
    a.op = o.op;
    a.root = o.root;
    if (kind == Kind::kSendRecv) {
      // Ring exchange: send to the right, receive from the left, in one group.
      size_t bytes = count * dtype_size(o.dtype);
      group_start();
      (void)p2p_send(*c, s, bytes, (c->rank + 1) % c->size);
      (void)p2p_recv(*c, r, bytes, (c->rank + c->size - 1) % c->size);
      (void)group_end();
      return;
    }
    Status st = dispatch(*c, kind, a, o.algo);
    if (!st.is_ok()) {
      std::fprintf(stderr, "tessera-perf: %s\n", st.message().c_str());
      std::exit(1);
    }
  }

  double max_over_ranks(double v) {
    double out = 0;
    Args a;
    a.send = &v;
    a.recv = &out;
    a.count = 1;
    a.dtype = DType::kFloat64;
    a.op = Op::kMax;
    (void)dispatch(*c, Kind::kAllreduce, a);
    return out;
  }
  double sum_over_ranks(double v) {
    double out = 0;
    Args a;
    a.send = &v;
    a.recv = &out;
    a.count = 1;
    a.dtype = DType::kFloat64;
    (void)dispatch(*c, Kind::kAllreduce, a);
    return out;
  }

  // The row a call of `count` elements runs and the model's estimate for it (us), as dispatch() selects it.
  std::pair<const char*, double> predicted(size_t count) const {
    Shape s = make_shape(*c, kind, count * dtype_size(o.dtype));
    s.dtype = o.dtype;
    s.op = o.op;
    const Algorithm* a = row_for(s, c->model, o.algo);
    if (!a) return {"none", 0};
    return {a->name, estimate(*a, s, c->model) * 1e6};
  }

  // Returns {time us, wrong}.
  std::pair<double, double> measure(size_t count, bool inplace) {
    fill(count);
    const size_t es = dtype_size(o.dtype);
    char* s = sbuf.data();
    char* r = rbuf.data();
    if (inplace) {
      // nccl-tests conventions: the result buffer holds the input at the rank's offset.
      size_t se, re;
      buffer_elems(kind, count, c->size, &se, &re);
      std::memcpy(rbuf.data() + (kind == Kind::kAllgather ? c->rank * count * es : 0), sbuf.data(), se * es);
      r = rbuf.data();
      s = kind == Kind::kAllgather ? r + c->rank * count * es : r;
    }
    double wrong = 0;
    if (o.check) {
      run_once(s, r, count);
      const char* out = r;
      if (kind == Kind::kReduceScatter && inplace) out = r;  // result at the start of the buffer
      wrong = sum_over_ranks(static_cast<double>(check(out, count)));
      fill(count);
      if (inplace) {
        size_t se, re;
        buffer_elems(kind, count, c->size, &se, &re);
        std::memcpy(rbuf.data() + (kind == Kind::kAllgather ? c->rank * count * es : 0), sbuf.data(), se * es);
      }
    }
    for (int i = 0; i < o.warmup; ++i) run_once(s, r, count);
    (void)dispatch(*c, Kind::kBarrier, Args{});
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) run_once(s, r, count);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;
    return {max_over_ranks(us), wrong};
  }
};

int run_coll(Kind kind, int argc, char** argv) {
  Opts o = parse(kind, argc, argv);
  shmem_init();
  auto cr = comm_create_team(pgas::team_world());
  if (!cr.is_ok()) {
    std::fprintf(stderr, "tessera-perf: %s\n", cr.status().message().c_str());
    return 1;
  }
  Bench b{cr.value(), kind, o, {}, {}};
  b.sbuf.sym = b.rbuf.sym = o.symmetric;
  const int n = b.c->size, me = b.c->rank;
  if (has_root(kind) && (o.root < 0 || o.root >= n)) usage(argv[0], "root out of range");
  const size_t es = dtype_size(o.dtype);
  // size column -> per-rank count
  auto count_of = [&](size_t bytes) {
    size_t div = (kind == Kind::kAllgather || kind == Kind::kReduceScatter || kind == Kind::kAlltoall ||
                  kind == Kind::kGather || kind == Kind::kScatter) ? static_cast<size_t>(n) : 1;
    return bytes / es / div;
  };
  std::vector<size_t> sizes;
  for (size_t sz = o.min_bytes; sz <= o.max_bytes;) {
    sizes.push_back(sz);
    size_t next = o.step ? sz + o.step : static_cast<size_t>(std::ceil(static_cast<double>(sz) * o.factor));
    if (next <= sz) break;
    sz = next;
  }
  const double bf = bus_factor(kind, n);
  if (me == 0 && !o.json) {
    std::printf("# tessera-perf %s: %d ranks, type %s%s%s, %d iterations (+%d warm-up), check %d\n", kind_name(kind), n,
                dtype_name(o.dtype), has_op(kind) ? ", op " : "", has_op(kind) ? op_name(o.op) : "", o.iters, o.warmup,
                o.check);
    std::printf("#                                                  out-of-place                       in-place\n");
    std::printf("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n");
    std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n");
  }
  if (me == 0 && o.json) {
    std::printf("{\"benchmark\":\"%s\",\"ranks\":%d,\"type\":\"%s\",\"op\":\"%s\",", kind_name(kind), n,
                dtype_name(o.dtype), op_name(o.op));
    // Across hosts: the link the communicator prices its rows with (the predictions below use it).
    if (const NetShape* net = b.c->net)
      std::printf("\"link\":{\"us\":%.2f,\"gbps\":%.3f,\"oneway_gbps\":%.3f,\"host_gbps\":%.3f,\"burst_gbps\":%.3f,"
                  "\"wake_us\":%.2f,\"source\":\"%s\"},\"hosts\":%d,\"ppn\":%d,\"contention\":%.2f,\"cma\":%s,",
                  net->link.alpha * 1e6, net->link.stream_bw / 1e9, net->link.oneway_bw / 1e9, net->link.host_bw / 1e9,
                  net->link.burst_bw / 1e9, net->link.wake * 1e6, net->link.source, net->hosts, net->ppn,
                  net->contention, b.c->cma ? "true" : "false");
    std::printf("\"results\":[");
  }
  double bus_sum = 0;
  int bus_n = 0;
  double wrong_total = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    size_t count = count_of(sizes[k]);
    size_t bytes = count * es * (count_of(sizes[k]) ? sizes[k] / (count * es) : 1);
    bytes = sizes[k] / es * es;
    if (kind == Kind::kBarrier) count = 0;
    auto [t1, w1] = b.measure(count, false);
    std::pair<double, double> ip{0, 0};
    if (o.inplace && kind != Kind::kBarrier && kind != Kind::kSendRecv) ip = b.measure(count, true);
    double total = static_cast<double>(count * es) * ((kind == Kind::kAllgather || kind == Kind::kReduceScatter ||
                                                       kind == Kind::kAlltoall || kind == Kind::kGather || kind == Kind::kScatter) ? n : 1);
    double alg1 = t1 > 0 ? total / (t1 * 1e3) : 0, alg2 = ip.first > 0 ? total / (ip.first * 1e3) : 0;
    bus_sum += alg1 * bf;
    ++bus_n;
    wrong_total += w1 + ip.second;
    if (me == 0) {
      if (o.json) {
        const auto [algo, predicted_us] = b.predicted(count);
        std::printf("%s{\"size\":%zu,\"count\":%zu,\"algo\":\"%s\",\"predicted_us\":%.3f,\"time_us\":%.3f,\"algbw\":%.4f,\"busbw\":%.4f,\"wrong\":%.0f,"
                    "\"inplace_time_us\":%.3f,\"inplace_algbw\":%.4f,\"inplace_busbw\":%.4f,\"inplace_wrong\":%.0f}",
                    k ? "," : "", static_cast<size_t>(total), count, algo, predicted_us, t1, alg1, alg1 * bf, w1, ip.first, alg2, alg2 * bf, ip.second);
        if (isatty(2)) std::fprintf(stderr, "\r[%zu/%zu sizes]", k + 1, sizes.size());
      } else {
        // #wrong is N/A when results are not checked (-c 0), as nccl-tests prints it.
        auto wrong_col = [&](double w) { return o.check ? fmt::format("{:6.0f}", w) : std::string("   N/A"); };
        std::printf("%12zu  %12zu  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %s  %7.2f  %6.2f  %6.2f  %s\n",
                    static_cast<size_t>(total), count, dtype_name(o.dtype), has_op(kind) ? op_name(o.op) : "none",
                    has_root(kind) ? std::to_string(o.root).c_str() : "-1", t1, alg1, alg1 * bf, wrong_col(w1).c_str(),
                    ip.first, alg2, alg2 * bf, wrong_col(ip.second).c_str());
      }
      std::fflush(stdout);
    }
    (void)bytes;
  }
  if (me == 0) {
    if (o.json) {
      std::printf("],\"avg_busbw\":%.4f,\"wrong\":%.0f}\n", bus_n ? bus_sum / bus_n : 0, wrong_total);
      if (isatty(2)) std::fprintf(stderr, "\n");
    } else {
      if (o.check) std::printf("# Out of bounds values : %.0f %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
      else std::printf("# Out of bounds values : N/A (results not checked; -c 1 checks them)\n");
      std::printf("# Avg bus bandwidth    : %.4f GB/s\n", bus_n ? bus_sum / bus_n : 0);
    }
  }
  comm_destroy(b.c);
  shmem_finalize();
  return wrong_total ? 1 : 0;
}

#define TS_PERF_COLL(name, kind, help)                                     \
  int run_##name(int argc, char** argv) { return run_coll(kind, argc, argv); } \
  const Registrar kReg_##name{#name, help, &run_##name};

TS_PERF_COLL(allreduce, Kind::kAllreduce, "collective: allreduce sweep (nccl-tests columns)")
TS_PERF_COLL(reduce_scatter, Kind::kReduceScatter, "collective: reduce-scatter sweep")
TS_PERF_COLL(allgather, Kind::kAllgather, "collective: allgather sweep")
TS_PERF_COLL(broadcast, Kind::kBroadcast, "collective: broadcast sweep")
TS_PERF_COLL(reduce, Kind::kReduce, "collective: reduce sweep")
TS_PERF_COLL(gather, Kind::kGather, "collective: gather sweep")
TS_PERF_COLL(scatter, Kind::kScatter, "collective: scatter sweep")
TS_PERF_COLL(alltoall, Kind::kAlltoall, "collective: alltoall sweep")
TS_PERF_COLL(barrier, Kind::kBarrier, "collective: barrier latency")
TS_PERF_COLL(sendrecv, Kind::kSendRecv, "collective: send/recv ring exchange")

}  // namespace
}  // namespace tessera::perf
