// Data-parallel training steps with gradient bucketing: every PE computes gradients of a toy linear model on
// its own shard of the data, layer by layer from the last, and marks each gradient ready as soon as it is
// final; the Bucketer averages full buckets across PEs on a comm stream while the next layers are still being
// computed. After the update every PE must hold the same parameters, which the example checks each step, and
// they must be the ones the averaged gradients give, which each PE computes alone to compare.
//
//   tessera-run -n 2 build/bin/data_parallel_step
#include <shmem.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <tessera/coll.hpp>

namespace tc = tessera::coll;

int main() {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  int rc = 0;
  {
    tc::Comm comm = tc::Comm::world();
    tc::Stream stream;
    // Parameters and gradients of 8 layers, each stored as a view of one flat buffer (the Bucketer then
    // reduces buckets in place, without packing).
    const std::vector<size_t> layer = {4096, 64, 65536, 256, 262144, 1024, 16384, 10};
    size_t total = 0;
    for (size_t n : layer) total += n;
    std::vector<float> params(total, 0.0f), grads(total);
    std::vector<size_t> offset;
    tc::Bucketer buckets(comm, stream, size_t{256} << 10, tc::RedOp::kAvg);  // 256 KiB buckets
    for (size_t k = 0, off = 0; k < layer.size(); off += layer[k++]) {
      offset.push_back(off);
      buckets.add(grads.data() + off, layer[k], tc::DataType::kFloat32);
    }
    const float lr = 0.1f;
    // The same steps without communication: the mean over ranks r of sin(i + k) * (r + 1) is
    // sin(i + k) * (npes + 1) / 2, so every PE can compute what the averaged steps must give.
    std::vector<float> expect(total, 0.0f);
    for (int step = 0; step < 5; ++step) {
      // Backward pass, last layer first: this PE's gradient depends on its rank (its data shard).
      for (size_t k = layer.size(); k-- > 0;) {
        float* g = grads.data() + offset[k];
        for (size_t i = 0; i < layer[k]; ++i)
          g[i] = std::sin(static_cast<float>(i + k)) * static_cast<float>(me + 1) + params[offset[k] + i];
        buckets.mark_ready(k);  // a full bucket starts its allreduce now, on the stream
      }
      buckets.finish();  // every bucket averaged, gradients unpacked
      for (size_t i = 0; i < total; ++i) params[i] -= lr * grads[i];
      size_t wrong = 0, first = total;
      for (size_t k = 0; k < layer.size(); ++k)
        for (size_t i = 0; i < layer[k]; ++i) {
          float& e = expect[offset[k] + i];
          e -= lr * (std::sin(static_cast<float>(i + k)) * static_cast<float>(npes + 1) / 2.0f + e);
          if (!(std::fabs(params[offset[k] + i] - e) <= 1e-4f * (1.0f + std::fabs(e))))
            ++wrong, first = std::min(first, offset[k] + i);
        }
      if (wrong) {
        std::fprintf(stderr, "PE %d: step %d: %zu parameters are not what averaged gradients give (the first, %zu: %g, "
                     "expected %g)\n", me, step, wrong, first, params[first], expect[first]);
        rc = 1;
        break;
      }
      // Every PE must now hold the same parameters: compare a checksum's min and max across PEs.
      double sum = 0;
      for (size_t i = 0; i < total; i += 7) sum += params[i] * static_cast<double>(i % 13 + 1);
      double lo = sum, hi = sum;
      comm.allreduce(&lo, &lo, 1, tc::DataType::kFloat64, tc::RedOp::kMin);
      comm.allreduce(&hi, &hi, 1, tc::DataType::kFloat64, tc::RedOp::kMax);
      if (lo != hi) {
        std::fprintf(stderr, "PE %d: step %d: parameters differ across PEs (checksums %.17g .. %.17g)\n", me, step, lo, hi);
        rc = 1;
        break;
      }
      if (me == 0)
        std::printf("step %d: %zu gradients in %zu buckets averaged over %d PE%s; parameters identical and as expected "
                    "(checksum %.6g)\n",
                    step, layer.size(), buckets.bucket_count(), npes, npes == 1 ? "" : "s", sum);
    }
  }
  shmem_finalize();
  return rc;
}
