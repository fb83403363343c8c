// Data-parallel training steps with gradient bucketing: every PE computes gradients of a toy linear model on
// its own shard of the data, layer by layer from the last, each layer's gradient one SPMD kernel; the Bucketer
// averages full buckets across PEs on a comm stream while the next layers are still being computed. After
// the update every PE must hold the same parameters, which the example checks each step, and they must be the
// ones the averaged gradients give, which each PE computes alone to compare.
//
// By default the backward kernels run on a compute stream and each gradient is handed to the Bucketer with
// the event recorded after its kernel: compute and communication are joined by events only, and the calling
// thread enqueues the whole step without waiting. --host-joins runs each kernel on the calling thread and marks
// the gradient ready when it returns (the host joins every gradient). --time prints the step time of both
// forms, of the backward pass alone and of the buckets' allreduces alone, and the share of the communication
// hidden behind compute (bench/stream_overlap.sh).
//
//   tessera-run -n 2 build/bin/data_parallel_step [--host-joins | --time] [--scale N] [--steps N]
#include <shmem.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <tessera/coll.hpp>
#include <tessera/kernel.hpp>

namespace tc = tessera::coll;
namespace tk = tessera::kernel;

namespace {

enum class Form { kStreams, kHostJoins, kComputeOnly, kCommOnly };

struct Model {
  std::vector<size_t> layer, offset;
  size_t total = 0;
  std::vector<float> params, grads, expect;
  explicit Model(size_t scale) {
    for (size_t n : {4096, 64, 65536, 256, 262144, 1024, 16384, 10}) layer.push_back(n * scale);
    for (size_t n : layer) offset.push_back(total), total += n;
    params.assign(total, 0.0f);
    grads.assign(total, 0.0f);
    expect.assign(total, 0.0f);
  }
};

// Layer k's gradient on this PE (its data shard: the rank), one kernel: each block a slice.
auto backward_kernel(Model& m, size_t k, int me) {
  return [&m, k, me](tk::BlockContext& b) {
    const size_t n = m.layer[k], per = (n + static_cast<size_t>(b.block_num()) - 1) / static_cast<size_t>(b.block_num());
    const size_t lo = std::min(n, per * static_cast<size_t>(b.block_idx())), hi = std::min(n, lo + per);
    float* g = m.grads.data() + m.offset[k];
    const float* p = m.params.data() + m.offset[k];
    for (size_t i = lo; i < hi; ++i) g[i] = std::sin(static_cast<float>(i + k)) * static_cast<float>(me + 1) + p[i];
  };
}

// One step in the given form; returns its seconds.
double step(Model& m, Form form, tc::Bucketer& buckets, tessera::Stream& compute, int me) {
  const tk::LaunchOptions opts{.block_num = 2, .name = "backward"};
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = m.layer.size(); k-- > 0;) {
    switch (form) {
      case Form::kStreams: {
        tk::launch(compute, opts, backward_kernel(m, k, me));
        tessera::Event ready;
        ready.record(compute);
        buckets.mark_ready(k, ready);  // the bucket's allreduce waits for the event on the comm stream
        break;
      }
      case Form::kHostJoins:
        tk::launch(opts, backward_kernel(m, k, me));
        buckets.mark_ready(k);
        break;
      case Form::kComputeOnly: tk::launch(opts, backward_kernel(m, k, me)); break;
      case Form::kCommOnly: buckets.mark_ready(k); break;
    }
  }
  if (form != Form::kComputeOnly) buckets.finish();  // every bucket averaged
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Applies the update and checks it against the steps without communication: the mean over ranks r of
// sin(i + k) * (r + 1) is sin(i + k) * (npes + 1) / 2. Returns false (with a message) when it differs.
bool update_and_check(Model& m, tc::Comm& comm, const tc::Bucketer& buckets, int me, int npes, int s) {
  const float lr = 0.1f;
  for (size_t i = 0; i < m.total; ++i) m.params[i] -= lr * m.grads[i];
  size_t wrong = 0, first = m.total;
  for (size_t k = 0; k < m.layer.size(); ++k)
    for (size_t i = 0; i < m.layer[k]; ++i) {
      float& e = m.expect[m.offset[k] + i];
      e -= lr * (std::sin(static_cast<float>(i + k)) * static_cast<float>(npes + 1) / 2.0f + e);
      if (!(std::fabs(m.params[m.offset[k] + i] - e) <= 1e-4f * (1.0f + std::fabs(e))))
        ++wrong, first = std::min(first, m.offset[k] + i);
    }
  if (wrong) {
    std::fprintf(stderr, "PE %d: step %d: %zu parameters are not what averaged gradients give (the first, %zu: %g, "
                 "expected %g)\n", me, s, wrong, first, m.params[first], m.expect[first]);
    return false;
  }
  // Every PE must now hold the same parameters: compare a checksum's min and max across PEs.
  double sum = 0;
  for (size_t i = 0; i < m.total; i += 7) sum += m.params[i] * static_cast<double>(i % 13 + 1);
  double lo = sum, hi = sum;
  comm.allreduce(&lo, &lo, 1, tc::DataType::kFloat64, tc::RedOp::kMin);
  comm.allreduce(&hi, &hi, 1, tc::DataType::kFloat64, tc::RedOp::kMax);
  if (lo != hi) {
    std::fprintf(stderr, "PE %d: step %d: parameters differ across PEs (checksums %.17g .. %.17g)\n", me, s, lo, hi);
    return false;
  }
  if (me == 0)
    std::printf("step %d: %zu gradients in %zu buckets averaged over %d PE%s; parameters identical and as expected "
                "(checksum %.6g)\n", s, m.layer.size(), buckets.bucket_count(), npes, npes == 1 ? "" : "s", sum);
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool host_joins = false, timing = false;
  size_t scale = 1;
  int steps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--host-joins") host_joins = true;
    else if (a == "--time") timing = true;
    else if ((a == "--scale" || a == "--steps") && i + 1 < argc) {
      const long v = std::strtol(argv[++i], nullptr, 10);
      if (v < 1 || v > 4096) {
        std::fprintf(stderr, "data_parallel_step: %s %s: must be 1..4096\n", a.c_str(), argv[i]);
        return 2;
      }
      (a == "--scale" ? scale = static_cast<size_t>(v) : steps = static_cast<int>(v));
    } else {
      std::fprintf(stderr, "usage: data_parallel_step [--host-joins | --time] [--scale N] [--steps N]\n");
      return 2;
    }
  }
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  int rc = 0;
  {
    tc::Comm comm = tc::Comm::world();
    tessera::Stream comm_stream, compute("compute stream");
    Model m(scale);
    // Gradients are views of one flat buffer, so the Bucketer reduces its 256 KiB buckets in place.
    tc::Bucketer buckets(comm, comm_stream, (size_t{256} << 10) * scale, tc::RedOp::kAvg);
    for (size_t k = 0; k < m.layer.size(); ++k) buckets.add(m.grads.data() + m.offset[k], m.layer[k], tc::DataType::kFloat32);
    if (!timing) {
      const Form form = host_joins ? Form::kHostJoins : Form::kStreams;
      for (int s = 0; s < steps && rc == 0; ++s) {
        step(m, form, buckets, compute, me);
        if (!update_and_check(m, comm, buckets, me, npes, s)) rc = 1;
      }
      if (me == 0 && rc == 0)
        std::printf("%d steps, %s\n", steps,
                    host_joins ? "the host joining each gradient" : "compute and comm streams joined by events");
    } else {
      // The four forms alternated step by step; the slowest PE's median step of each.
      const Form forms[] = {Form::kStreams, Form::kHostJoins, Form::kComputeOnly, Form::kCommOnly};
      std::vector<double> t[4];
      for (int s = 0; s < steps + 1; ++s)
        for (int f = 0; f < 4; ++f) {
          comm.barrier();
          double sec = step(m, forms[f], buckets, compute, me);
          comm.allreduce(&sec, &sec, 1, tc::DataType::kFloat64, tc::RedOp::kMax);
          if (s > 0) t[f].push_back(sec * 1e3);  // the first step warms up
        }
      const double streams = median(t[0]), host = median(t[1]), comp = median(t[2]), comm_ms = median(t[3]);
      auto hidden = [&](double stepped) { return comm_ms > 0 ? (comp + comm_ms - stepped) / comm_ms : 0; };
      if (me == 0)
        std::printf("%d PEs, %.1f MiB of gradients, median of %d steps: events %.2f ms, host joins %.2f ms, compute "
                    "alone %.2f ms, allreduces alone %.2f ms; communication hidden: events %.0f%%, host joins %.0f%%\n",
                    npes, static_cast<double>(m.total * sizeof(float)) / (1 << 20), steps, streams, host, comp, comm_ms,
                    100 * hidden(streams), 100 * hidden(host));
    }
  }
  shmem_finalize();
  return rc;
}
