#include "coll/select/model.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "base/memcopy.h"
#include "coll/reduce/reduce.h"
#include "coll/select/model_file.h"
#include "transport/shm/peer_copy.h"

namespace tessera::coll {
namespace {
const config::Var<std::string> kModelFile{
    "TESSERA_COLL_MODEL", "",
    "File with the collective cost model ('alpha=<s> beta=<s/byte> gamma=<s/byte>', optionally "
    "'cma_beta=<s/byte>', 'cma_beta_mem=<s/byte>', 'cache_bytes=<bytes>', 'beta_mem=<s/byte>', 'gamma_mem=<s/byte>'); "
    "empty: the per-host cache, measured on first use"};

std::string cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string dir = xdg && *xdg ? std::string(xdg) + "/tessera" : home && *home ? std::string(home) + "/.cache/tessera" : "";
  if (dir.empty()) return "";
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  // The version in the name: caches written by an older way of measuring are measured again.
  return dir + "/coll-model-v4-" + host + ".txt";
}

// The best of `reps` runs (the 1 MiB copies are a few tens of microseconds: 9 runs ride out a preemption).
double seconds_of(auto&& f, int reps = 9) {
  double best = 1e9;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

ModelParams measure() {
  ModelParams m;
  // 1 MiB: the size of the pieces the staged algorithms copy through their staging slots, which stay in
  // L2/L3. A larger copy, mostly from memory, overprices those copies, and the model then chooses the
  // single-copy path where the staged copies are faster (docs/coll.md, single copy pricing).
  const size_t n = size_t{1} << 20;
  std::vector<float> a(n / 4, 1.0f), b(n / 4, 2.0f), c(n / 4);
  double tc = seconds_of([&] { memcopy(c.data(), a.data(), n); });
  const void* srcs[2] = {a.data(), b.data()};
  double tr = seconds_of([&] { reduce(c.data(), srcs, 2, n / 4, DType::kFloat32, Op::kSum); });
  m.beta = tc / static_cast<double>(n);
  m.gamma = std::max(1e-12, (tr - tc) / static_cast<double>(n));
  // cma_beta: the same copy through process_vm_readv of this process (the kernel path a peer's read takes,
  // 1 MiB per call as the algorithms do). Unavailable: the single-copy path is not used anyway.
  bool cma_ok = true;
  double tk = seconds_of([&] {
    for (size_t o = 0; o < n && cma_ok; o += size_t{1} << 20)
      cma_ok = transport::shm::peer_copy_direct(getpid(), reinterpret_cast<char*>(c.data()) + o,
                                                reinterpret_cast<char*>(a.data()) + o, size_t{1} << 20, false) == 0;
  });
  m.cma_beta = cma_ok ? std::max(m.beta, tk / static_cast<double>(n)) : 3 * m.beta;
  m.cma_beta_mem = m.cma_beta;
  // cache_bytes: the largest footprint (source + destination) whose repeated copy still runs at 0.7 of the
  // 1 MiB rate, probing 8 to 64 MiB; beta_mem and gamma_mem: the copy and a two-input reduction at a 64 MiB
  // footprint; cma_beta_mem: process_vm_readv at a 64 MiB footprint, repeated as a loop of calls repeats
  // it. Once per host, mostly faulting in the 64 MiB (its cost: docs/journal.md, "Collective selection and
  // send/recv").
  const size_t big = size_t{32} << 20;
  std::vector<char> x(big, 1), y(big, 2);
  m.cache_bytes = 4.0 * static_cast<double>(n);
  for (size_t half = size_t{4} << 20; half <= big; half *= 2) {
    double t = seconds_of([&] { memcopy(y.data(), x.data(), half); }, 5);
    if (t / static_cast<double>(half) > m.beta / 0.7) break;
    m.cache_bytes = 2.0 * static_cast<double>(half);
  }
  // The best of 7: the PEs of a host measure at once when its first job starts, and a copy that shares its
  // CPU and the memory with theirs reads low (docs/journal.md, "The memory's rate").
  const double tb = seconds_of([&] { memcopy(y.data(), x.data(), big); }, 7);
  m.beta_mem = std::max(m.beta, tb / static_cast<double>(big));
  const void* halves[2] = {x.data(), x.data() + big / 2};
  const double tg = seconds_of([&] { reduce(y.data(), halves, 2, big / 2 / 4, DType::kFloat32, Op::kSum); }, 7);
  m.gamma_mem = std::max(m.gamma, (tg - m.beta_mem * static_cast<double>(big / 2)) / static_cast<double>(big / 2));
  if (cma_ok) {
    double tm = seconds_of([&] {
      for (size_t o = 0; o < big && cma_ok; o += n)
        cma_ok = transport::shm::peer_copy_direct(getpid(), y.data() + o, x.data() + o, n, false) == 0;
    }, 5);
    if (cma_ok) m.cma_beta_mem = std::max(m.cma_beta, tm / static_cast<double>(big));
  }
  // alpha: one cache-line handoff between cores, plus the polls of n flags a step makes. Measuring it
  // needs two PEs at once, so the default stands (override it with a model file).
  std::snprintf(m.source, sizeof m.source, "measured");
  return m;
}
}  // namespace

ModelParams load_model() {
  static std::once_flag once;
  static ModelParams cached;
  std::call_once(once, [] {
    ModelParams m;
    const std::string& file = kModelFile.get();
    if (!file.empty()) {
      std::ifstream in(file);
      std::stringstream ss;
      ss << in.rdbuf();
      if (!in) log::fatal("TESSERA_COLL_MODEL={}: cannot read the file: {}", file, std::strerror(errno));
      if (Status st = parse_model(ss.str(), "TESSERA_COLL_MODEL=" + file, false, &m); !st.is_ok())
        log::fatal("{}", st.message());
      std::snprintf(m.source, sizeof m.source, "file");
      cached = m;
      return;
    }
    std::string path = cache_path();
    if (!path.empty()) {
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      // A cache that does not parse (an older format, a torn write) is measured again and rewritten.
      if (in && parse_model(ss.str(), path, true, &m).is_ok()) {
        std::snprintf(m.source, sizeof m.source, "cache");
        cached = m;
        return;
      }
    }
    m = measure();
    if (!path.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
      std::string tmp = path + "." + std::to_string(getpid());
      if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fputs(format_model(m).c_str(), f);
        std::fclose(f);
        std::filesystem::rename(tmp, path, ec);
      }
    }
    cached = m;
  });
  return cached;
}

std::string describe(const ModelParams& m) {
  return fmt::format("alpha {:.2f} us/step ({:.1f} us oversubscribed), beta {:.1f} GB/s copy, gamma {:.1f} GB/s "
                     "reduce input ({:.1f} and {:.1f} beyond {:.0f} MiB), cma_beta {:.1f} GB/s process_vm_readv ({:.1f} "
                     "GB/s beyond) ({})",
                     m.alpha * 1e6, m.oversub_alpha * 1e6, 1e-9 / m.beta, 1e-9 / m.gamma, 1e-9 / m.beta_mem,
                     1e-9 / m.gamma_mem, std::min(m.cache_bytes, 1e12) / double(1 << 20), 1e-9 / m.cma_beta,
                     1e-9 / m.cma_beta_mem, m.source);
}

}  // namespace tessera::coll
