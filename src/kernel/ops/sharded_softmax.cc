// Softmax over a dimension sharded across PEs, with the exchange done by the kernel's blocks
// (kernel-initiated communication) instead of a separate allreduce.
//
// One launch per PE; block b owns rows [r0, r1) (the same split on every PE is not required):
//   step 1: local max of each row -> workspace; put the block's slice of maxima into slot [my_pe] of every
//           PE's part_max with put-with-signal (signal += rows in the slice)
//   step 2: wait until sig[0] counts rows * n_pes more rows than before this call (all PEs' maxima are in);
//           M = max over PEs in PE order; local sum of exp(x - M) -> put to part_sum the same way
//   step 3: wait for sig[1]; S = sum over PEs in PE order; y = exp(x - M) / S  or  x - M - log S
// Reuse of the exchange buffers by the next call is safe without a barrier: a PE can only put call e+1's
// maxima after finishing call e, and a peer can only overwrite part_sum in call e+1 after it received this
// PE's call e+1 maxima (sent after this PE finished reading call e's sums). Signals are cumulative
// (never reset), so the wait targets are epoch * rows-so-far, identical on every PE.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "kernel/ops/common.h"
#include "kernel/ops/prims.h"
#include "kernel/runtime/runtime.h"
#include "pgas/heap.h"
#include "pgas/p2p.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel {
namespace {
[[noreturn]] void fail(const Status& st) { throw Error(st.message()); }
}  // namespace

ShardedSoftmax::ShardedSoftmax(int64_t max_rows) {
  if (max_rows < 0) fail(invalid_arg("ShardedSoftmax: max_rows={} must be >= 0", max_rows));
  max_rows_ = max_rows;
  if (!pgas::is_initialized()) pgas::fail_not_initialized("ShardedSoftmax");
  n_pes_ = pgas::rt().n_pes;
  my_pe_ = pgas::rt().my_pe;
  const size_t limit = SIZE_MAX / sizeof(double) / static_cast<size_t>(n_pes_);
  if (static_cast<uint64_t>(max_rows) > limit)
    fail(invalid_arg("ShardedSoftmax: max_rows={} overflows the exchange buffers' size (limit {} at {} PEs)",
                     max_rows, limit, n_pes_));
  const size_t slots = static_cast<size_t>(n_pes_) * static_cast<size_t>(std::max<int64_t>(max_rows, 1));
  part_max_ = static_cast<float*>(pgas::sym_malloc(slots * sizeof(float), "ShardedSoftmax"));
  part_sum_ = static_cast<double*>(pgas::sym_malloc(slots * sizeof(double), "ShardedSoftmax"));
  // collective, zeroed before its barrier
  sig_ = static_cast<uint64_t*>(pgas::sym_calloc(2, sizeof(uint64_t), "ShardedSoftmax"));
  if (!part_max_ || !part_sum_ || !sig_) {
    // Every PE's heap has the same layout, so every PE fails here alike: free what was taken (collective).
    if (sig_) pgas::sym_free(sig_, "ShardedSoftmax");
    if (part_sum_) pgas::sym_free(part_sum_, "ShardedSoftmax");
    if (part_max_) pgas::sym_free(part_max_, "ShardedSoftmax");
    fail(make_status(Code::kOutOfMemory, "ShardedSoftmax: the symmetric heap has no room for {} rows x {} PEs ({} bytes; "
                     "SHMEM_SYMMETRIC_SIZE sets the heap's size)", max_rows, n_pes_, slots * (sizeof(float) + sizeof(double))));
  }
}

ShardedSoftmax::~ShardedSoftmax() {
  pgas::sym_free(sig_, "~ShardedSoftmax");
  pgas::sym_free(part_sum_, "~ShardedSoftmax");
  pgas::sym_free(part_max_, "~ShardedSoftmax");
}

void ShardedSoftmax::softmax(ConstTensor x, Tensor y, float* lse, const OpOptions& opts) { run(x, y, lse, false, opts); }
void ShardedSoftmax::log_softmax(ConstTensor x, Tensor y, float* lse, const OpOptions& opts) { run(x, y, lse, true, opts); }

void ShardedSoftmax::run(ConstTensor x, Tensor y, float* lse, bool log, const OpOptions& opts) {
  const char* name = log ? "sharded log_softmax" : "sharded softmax";
  if (opts.stream) {  // one item of the stream, which runs this call later (its checks fail the item)
    OpOptions later = opts;
    later.stream = nullptr;
    opts.stream->enqueue(std::string(name) + " " + to_string(x.shape) + " " + dtype_name(x.dtype),
                         [this, x, y, lse, log, later] { run(x, y, lse, log, later); });
    return;
  }
  auto check = [](const Status& st) { if (!st.is_ok()) fail(st); };
  check(ops::check_tensor(name, "x", x));
  check(ops::check_like(name, "y", x, y));
  if (x.shape.rank != 2) fail(invalid_arg("{}: x.shape {} must be [rows, local columns]", name, to_string(x.shape)));
  const int64_t rows = x.shape.dims[0];
  if (rows > max_rows_) fail(invalid_arg("{}: {} rows, but the object was created for max_rows={}", name, rows, max_rows_));
  auto nb = rt::resolve_block_num(opts.block_num, name);
  check(nb.status());
  if (rows == 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>(nb.value(), rows));

  const size_t R = static_cast<size_t>(rows), n = static_cast<size_t>(x.shape.dims[1]);
  const size_t es = dtype_size(x.dtype), stride = static_cast<size_t>(max_rows_);
  const ops::Prims& p = ops::prims(x.dtype);
  const char* xb = static_cast<const char*>(x.data);
  char* yb = static_cast<char*>(y.data);
  // Rows each signal will have counted after this call: every PE sends each row to every PE once.
  received_ += static_cast<uint64_t>(R) * static_cast<uint64_t>(n_pes_);
  const uint64_t want = received_;
  float* pmax = part_max_;
  double* psum = part_sum_;
  uint64_t* sig = sig_;
  const int npes = n_pes_, me = my_pe_;
  const bool stream = ops::stream_output(R * n * es);

  auto body = [&](BlockContext& c) {
    double* lsum = c.workspace_as<double>();  // [rows] this PE's partials (contiguous per block: put source)
    float* lmax = reinterpret_cast<float*>(lsum + R);
    float* llo = lmax + R;  // local minima: whether the exponentials need the underflow flush (exp_sum)
    auto [r0, r1] = ops::split(R, c.block_num(), c.block_idx());
    const size_t cnt = r1 - r0;
    auto row = [&](size_t r) { return xb + r * n * es; };
    auto send = [&](auto* part, const auto* src, uint64_t* s) {
      for (int k = 0; k < npes; ++k) {
        const int q = (me + k) % npes;  // start with the next PE: spreads the traffic
        pgas::put_signal("ShardedSoftmax", part + static_cast<size_t>(me) * stride + r0, src + r0,
                         cnt * sizeof(*src), s, cnt, pgas::kSignalAdd, q);
      }
    };
    // step 1: local maxima, then to every PE
    for (size_t r = r0; r < r1; ++r) lmax[r] = p.range(row(r), n, &llo[r]);
    send(pmax, lmax, &sig[0]);
    pgas::signal_wait_until("ShardedSoftmax", &sig[0], pgas::kGe, want);
    // step 2: global max (PE order), local sums of exponentials, to every PE
    auto gmax = [&](size_t r) {
      float m = pmax[r];
      for (int q = 1; q < npes; ++q) {
        const float v = pmax[static_cast<size_t>(q) * stride + r];
        m = (std::isnan(m) || std::isnan(v)) ? std::numeric_limits<float>::quiet_NaN() : std::max(m, v);
      }
      return m;
    };
    for (size_t r = r0; r < r1; ++r) {
      const float m = gmax(r);
      lsum[r] = std::isfinite(m) ? p.exp_sum(row(r), n, m, llo[r], nullptr, nullptr, nullptr, nullptr) : 0.0;
    }
    send(psum, lsum, &sig[1]);
    pgas::signal_wait_until("ShardedSoftmax", &sig[1], pgas::kGe, want);
    // step 3: normalise with the full-row statistics
    for (size_t r = r0; r < r1; ++r) {
      const float m = gmax(r);
      double s = 0;
      for (int q = 0; q < npes; ++q) s += psum[static_cast<size_t>(q) * stride + r];
      const double l = static_cast<double>(m) + std::log(s);
      if (lse) lse[r] = std::isfinite(m) ? static_cast<float>(l) : std::numeric_limits<float>::quiet_NaN();
      char* out = yb + r * n * es;
      if (!std::isfinite(m)) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (size_t i = 0; i < n; ++i) p.from_f32(&nan, out + i * es, 1);
      } else if (log) {
        p.add(row(r), out, n, static_cast<float>(-l), stream);
      } else {
        p.exp_scale(row(r), out, n, m, llo[r], static_cast<float>(1.0 / s), stream);
      }
    }
    if (stream) ops::stream_fence();
  };
  check(rt::launch_fn(LaunchOptions{blocks, R * (sizeof(double) + 2 * sizeof(float)), name}, body));
}

}  // namespace tessera::kernel
