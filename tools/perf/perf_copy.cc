// tessera-perf copy: the measurement behind the copy engine's threshold (docs/journal.md, "Copy engine
// threshold").
// For each size, copies a private source into a shared-memory destination (as a put does) with glibc's
// memcpy and with Tessera's streaming-store loop (base/memcopy.h), cycling over enough buffers to defeat
// the caches where the size calls for it (or, with --hot, into one destination that stays cached), and prints GB/s of both. One PE; no launcher needed.
#include <CLI/CLI.hpp>
#include <cstring>
#include <vector>

#include "base/config.h"
#include "base/cpu.h"
#include "base/memcopy.h"
#include "perf/perf.h"
#include "transport/shm/segment.h"

namespace {

int run_copy(int argc, char** argv) {
  CLI::App app{"memcpy vs streaming-store copy into shared memory"};
  std::string min_s = "4K", max_s = "64M";
  app.add_option("-b", min_s, "smallest size");
  app.add_option("-e", max_s, "largest size");
  bool hot = false;
  app.add_flag("--hot", hot, "copy into the same destination every time (as the OSU window benchmark does)");
  CLI11_PARSE(app, argc, argv);
  auto mn = tessera::config::parse_size("-b", min_s), mx = tessera::config::parse_size("-e", max_s);
  if (!mn.is_ok() || !mx.is_ok()) {
    std::fprintf(stderr, "tessera-perf copy: %s\n", (!mn.is_ok() ? mn : mx).status().message().c_str());
    return 2;
  }
  size_t max = mx.value();
  // A window of buffers totalling at least 4x the last-level cache, so large sizes miss the caches.
  size_t llc = tessera::llc_bytes();
  auto seg = tessera::transport::shm::map_private(std::max(max, size_t{4} * llc) + max);
  if (!seg.is_ok()) {
    std::fprintf(stderr, "tessera-perf copy: %s\n", seg.status().message().c_str());
    return 1;
  }
  char* dst_base = static_cast<char*>(seg.value());
  std::vector<char> src(max, 1);
  std::memset(dst_base, 0, std::max(max, size_t{4} * llc) + max);
  std::printf("# last-level cache %s\n# %12s %14s %14s %8s\n", tessera::config::format_size(llc).c_str(), "size(B)",
              "memcpy(GB/s)", "stream(GB/s)", "ratio");
  for (size_t size = mn.value(); size <= max; size *= 2) {
    size_t nbuf = hot ? 1 : std::max<size_t>(1, std::min<size_t>(64, (4 * llc) / size));
    size_t iters = std::max<size_t>(nbuf, (size_t{1} << 31) / size);
    double gbps[2];
    for (int mode = 0; mode < 2; ++mode) {
      for (size_t b = 0; b < nbuf; ++b) {  // warm up page tables
        char* d = dst_base + b * size;
        mode ? tessera::copy_streaming_loop(d, src.data(), size) : (void)std::memcpy(d, src.data(), size);
      }
      uint64_t t0 = tessera::now_ns();
      for (size_t i = 0; i < iters; ++i) {
        char* d = dst_base + (i % nbuf) * size;
        if (mode) tessera::copy_streaming_loop(d, src.data(), size);
        else std::memcpy(d, src.data(), size);
        __asm__ __volatile__("" ::: "memory");
      }
      gbps[mode] = static_cast<double>(size) * static_cast<double>(iters) / static_cast<double>(tessera::now_ns() - t0);
    }
    std::printf("  %12zu %14.2f %14.2f %8.2f\n", size, gbps[0], gbps[1], gbps[1] / gbps[0]);
    if (size > max / 2) break;
  }
  return 0;
}

const tessera::perf::Registrar kReg{"copy", "memcpy vs streaming stores into shared memory (copy engine choice)",
                                    &run_copy};
}  // namespace
