// tessera-perf bucket: one data-parallel step's gradient allreduce over ResNet-50's parameter shapes, done
// four ways: one blocking allreduce per gradient; a Bucketer (buckets of --bucket-mb on a comm stream) over
// views of one flat gradient buffer (buckets allreduced in place); a Bucketer over separately allocated
// gradients (buckets packed and unpacked); one allreduce of the whole flat buffer (the bound).
//   tessera-run -n 2 tessera-perf bucket [-n steps] [-w warmup] [--bucket-mb 25] [--json]
// bench/bucket_compare.sh runs PyTorch's DDP (gloo) on the same shapes side by side.
#include <shmem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tessera/coll.hpp>

#include "perf/perf.h"

namespace tessera::perf {
namespace {
using namespace tessera::coll;

// ResNet-50's parameters in the order the forward pass creates them: the stem, four stages of bottleneck
// blocks (1x1, 3x3, 1x1 convolutions, each followed by batch-norm weight and bias; a 1x1 projection on the
// first block of each stage), and the classifier. 161 tensors, 25.6 M floats. bench/bucket_gloo.py builds
// the same list.
std::vector<size_t> resnet50_shapes() {
  std::vector<size_t> s;
  auto conv_bn = [&](size_t cin, size_t cout, size_t k) {
    s.push_back(cin * cout * k * k);
    s.push_back(cout);
    s.push_back(cout);
  };
  conv_bn(3, 64, 7);
  size_t cin = 64;
  const size_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int st = 0; st < 4; ++st) {
    const size_t w = widths[st];
    for (size_t b = 0; b < blocks[st]; ++b) {
      conv_bn(cin, w, 1);
      conv_bn(w, w, 3);
      conv_bn(w, 4 * w, 1);
      if (b == 0) conv_bn(cin, 4 * w, 1);
      cin = 4 * w;
    }
  }
  s.push_back(2048 * 1000);
  s.push_back(1000);
  return s;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int run_bucket(int argc, char** argv) {
  int steps = 10, warmup = 3;
  double bucket_mb = 25;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", argv[0], a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-n") steps = std::atoi(val());
    else if (a == "-w") warmup = std::atoi(val());
    else if (a == "--bucket-mb") bucket_mb = std::atof(val());
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "usage: tessera-run -n N %s [-n steps] [-w warmup] [--bucket-mb MB] [--json]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1 || warmup < 0 || !(bucket_mb > 0)) {
    std::fprintf(stderr, "%s: need -n >= 1, -w >= 0 and --bucket-mb > 0 (got %d, %d, %g)\n", argv[0], steps, warmup,
                 bucket_mb);
    return 2;
  }
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  int rc = 0;
  {
    Comm comm = Comm::world();
    Stream stream;
    const std::vector<size_t> shapes = resnet50_shapes();
    size_t total = 0;
    for (size_t c : shapes) total += c;
    std::vector<float> flat(total);
    std::vector<float*> grads;
    for (size_t off = 0, k = 0; k < shapes.size(); off += shapes[k++]) grads.push_back(flat.data() + off);
    std::vector<std::vector<float>> separate(shapes.size());
    for (size_t k = 0; k < shapes.size(); ++k) separate[k].resize(shapes[k]);
    auto fill = [&] {
      std::fill(flat.begin(), flat.end(), static_cast<float>(me + 1));
      for (auto& g : separate) std::fill(g.begin(), g.end(), static_cast<float>(me + 1));
    };
    // Mean of (rank + 1) over ranks: (n + 1) / 2 everywhere.
    auto check = [&](const char* what, const float* p, size_t count) {
      const float want = static_cast<float>(n + 1) / 2.0f;
      for (size_t i = 0; i < count; i += 4099)
        if (p[i] != want) {
          std::fprintf(stderr, "tessera-perf bucket: %s: element %zu is %g, expected %g\n", what, i, p[i], want);
          rc = 1;
          return;
        }
    };
    const auto cap = static_cast<size_t>(bucket_mb * (1 << 20));
    Bucketer views(comm, stream, cap, RedOp::kAvg), packed(comm, stream, cap, RedOp::kAvg);
    for (size_t k = 0; k < shapes.size(); ++k) {
      views.add(grads[k], shapes[k], DataType::kFloat32);
      packed.add(separate[k].data(), shapes[k], DataType::kFloat32);
    }

    auto measure = [&](const char* what, bool on_separate, auto&& step) {
      double best = 1e30, sum = 0;
      for (int s = 0; s < warmup + steps; ++s) {
        fill();
        comm.barrier();
        double t0 = now_s();
        step();
        double t = now_s() - t0;
        if (s >= warmup) {
          best = std::min(best, t);
          sum += t;
        }
        if (on_separate)
          for (const auto& g : separate) check(what, g.data(), g.size());
        else
          check(what, flat.data(), total);
      }
      // The slowest rank's mean decides a step.
      double mean = sum / steps;
      std::vector<double> all(static_cast<size_t>(n));
      comm.allgather(&mean, all.data(), 1, DataType::kFloat64);
      return *std::max_element(all.begin(), all.end()) * 1e3;
    };
    // Backward order: the last layer's gradients are ready first.
    const double per_tensor = measure("per-tensor", false, [&] {
      for (size_t k = shapes.size(); k-- > 0;) comm.allreduce(grads[k], grads[k], shapes[k], DataType::kFloat32, RedOp::kAvg);
    });
    const double in_place = measure("bucketed views", false, [&] {
      for (size_t k = shapes.size(); k-- > 0;) views.mark_ready(k);
      views.finish();
    });
    const double packs = measure("bucketed packed", true, [&] {
      for (size_t k = shapes.size(); k-- > 0;) packed.mark_ready(k);
      packed.finish();
    });
    const double whole = measure("flat", false, [&] { comm.allreduce(flat.data(), flat.data(), total, DataType::kFloat32, RedOp::kAvg); });
    if (me == 0) {
      if (json) {
        std::printf("{\"benchmark\":\"bucket\",\"ranks\":%d,\"tensors\":%zu,\"floats\":%zu,\"buckets\":%zu,"
                    "\"bucket_mb\":%g,\"per_tensor_ms\":%.3f,\"bucketed_ms\":%.3f,\"packed_ms\":%.3f,"
                    "\"flat_ms\":%.3f}\n",
                    n, shapes.size(), total, views.bucket_count(), bucket_mb, per_tensor, in_place, packs, whole);
      } else {
        std::printf("# gradient allreduce (avg, float32) of one step over ResNet-50's %zu parameter tensors, %.1f M "
                    "floats (%.1f MiB), %d ranks; mean of %d steps, slowest rank\n",
                    shapes.size(), static_cast<double>(total) / 1e6, static_cast<double>(total) * 4 / (1 << 20), n,
                    steps);
        std::printf("%-44s %10.3f ms\n", "one allreduce per tensor", per_tensor);
        std::printf("%-44s %10.3f ms\n", "Bucketer, views of one flat buffer", in_place);
        std::printf("%-44s %10.3f ms\n", "Bucketer, separate tensors (packed)", packs);
        std::printf("# %zu buckets of at most %g MiB\n", views.bucket_count(), bucket_mb);
        std::printf("%-44s %10.3f ms\n", "one allreduce of the flat buffer", whole);
      }
    }
    comm.barrier();
  }
  shmem_finalize();
  return rc;
}

const Registrar kReg{"bucket", "gradient allreduce of one training step: per tensor vs bucketed (Bucketer)", &run_bucket};

}  // namespace
}  // namespace tessera::perf
