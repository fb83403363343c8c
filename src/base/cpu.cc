#include "base/cpu.h"

#include <hwloc.h>
#include <sched.h>
#include <unistd.h>
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>
#include <string>

namespace tessera {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {
using detail::rdtsc;
using detail::TscClock;

// Reads now_ns() and the TSC at the same moment: the TSC is read on both sides of the clock and the pair is
// kept only when no preemption or interrupt fell between them.
bool sample(uint64_t* ns, uint64_t* tsc) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const uint64_t t1 = rdtsc();
    const uint64_t n = now_ns();
    const uint64_t t2 = rdtsc();
    if (t2 > t1 && t2 - t1 < 4096) {
      *ns = n;
      *tsc = t1 + (t2 - t1) / 2;
      return true;
    }
  }
  return false;
}

// Measures the tick rate over [anchor, now] and schedules the next measurement.
void remeasure(TscClock& c) {
  uint64_t ns, t;
  if (!sample(&ns, &t) || t <= c.tsc0 || ns <= c.ns0) return;
  const uint64_t span = t - c.tsc0;
  c.mult.store(static_cast<uint64_t>((static_cast<unsigned __int128>(ns - c.ns0) << 32) / span),
               std::memory_order_relaxed);
  const uint64_t per_second = static_cast<uint64_t>(static_cast<double>(span) * 1e9 / static_cast<double>(ns - c.ns0));
  c.next.store(t + std::min(span, per_second), std::memory_order_relaxed);
}

// Anchors the clock and measures a first rate, once per process; `ready` stays false when the kernel's
// clock is not the TSC.
void start_clock(TscClock& c) {
  static std::once_flag once;
  std::call_once(once, [&c] {
    char src[32] = {};
    if (FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")) {
      if (!std::fgets(src, sizeof src, f)) src[0] = 0;
      std::fclose(f);
    }
    if (std::strcmp(src, "tsc\n") != 0) return;
    if (!sample(&c.ns0, &c.tsc0)) return;
    while (now_ns() < c.ns0 + 20'000) cpu_relax();  // a first rate over 20 us, refined from there
    remeasure(c);
    if (c.mult.load() != 0) c.ready.store(true, std::memory_order_release);
  });
}
}  // namespace

namespace detail {
TscClock g_tsc;

uint64_t fast_now_slow() {
  TscClock& c = g_tsc;
  if (!c.ready.load(std::memory_order_acquire)) {
    start_clock(c);
    if (!c.ready.load(std::memory_order_acquire)) return now_ns();
  }
  const uint64_t t = rdtsc();
  if (t < c.tsc0) return now_ns();
  if (t >= c.next.load(std::memory_order_relaxed)) remeasure(c);
  return tsc_ns(c, t);
}
}  // namespace detail

bool job_cpu_set(cpu_set_t* out) {
  CPU_ZERO(out);
  if (const char* list = std::getenv("TESSERA_JOB_CPUS")) {
    bool ok = *list != '\0';
    for (const char* p = list; ok && *p;) {
      char* end = nullptr;
      long c = std::strtol(p, &end, 10);
      if (end == p || c < 0 || c >= CPU_SETSIZE || (*end != ',' && *end != '\0')) ok = false;
      else CPU_SET(static_cast<int>(c), out);
      p = *end == ',' ? end + 1 : end;
    }
    if (ok) return true;  // a malformed list is not ours to judge: fall back to the mask
    CPU_ZERO(out);
  }
  return sched_getaffinity(0, sizeof(*out), out) == 0;
}

int usable_cpus() {
  cpu_set_t set;
  if (!job_cpu_set(&set)) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int bound_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1) return -1;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) return i;
  return -1;
}

void unbind_thread_to_job_cpus() {
  cpu_set_t set;
  if (job_cpu_set(&set) && CPU_COUNT(&set) > 0) sched_setaffinity(0, sizeof set, &set);
}

bool cpus_near_nic(const char* nic, cpu_set_t* out) {
  // From sysfs rather than hwloc's I/O discovery: that loads hwloc's PCI plugin, which keeps allocations
  // past its unloading (a leak in every PE under LeakSanitizer), to learn the same number.
  CPU_ZERO(out);
  cpu_set_t job;
  if (!job_cpu_set(&job)) return false;
  std::string dev = nic ? nic : "";
  if (dev.empty()) {  // the first network device backed by hardware (a "device" link; not lo, veth, bridges)
    if (DIR* d = opendir("/sys/class/net")) {
      std::vector<std::string> names;
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.' && access(("/sys/class/net/" + std::string(e->d_name) + "/device").c_str(), F_OK) == 0)
          names.emplace_back(e->d_name);
      closedir(d);
      std::sort(names.begin(), names.end());
      if (!names.empty()) dev = names[0];
    }
  }
  if (dev.empty() || dev.find('/') != std::string::npos) return false;
  int node = -1;
  for (const char* cls : {"/sys/class/net/", "/sys/class/infiniband/"})
    if (std::FILE* f = std::fopen((cls + dev + "/device/numa_node").c_str(), "r")) {
      if (std::fscanf(f, "%d", &node) != 1) node = -1;
      std::fclose(f);
      break;
    }
  if (node < 0) return false;
  std::FILE* f = std::fopen(("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist").c_str(), "r");
  if (!f) return false;
  // "0-3,8-11"
  int lo = 0, hi = 0;
  char sep = 0;
  while (std::fscanf(f, "%d", &lo) == 1) {
    hi = lo;
    if (std::fscanf(f, "%c", &sep) == 1 && sep == '-') {
      if (std::fscanf(f, "%d", &hi) != 1) break;
      if (std::fscanf(f, "%c", &sep) != 1) sep = 0;
    }
    for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c)
      if (c >= 0 && CPU_ISSET(c, &job)) CPU_SET(c, out);
    if (sep != ',') break;
  }
  std::fclose(f);
  return CPU_COUNT(out) > 0;
}

namespace {
struct CacheSizes {
  size_t l2 = 1 << 20;
  size_t llc = 16 << 20;
};
const CacheSizes& caches() {
  static CacheSizes c;
  static std::once_flag once;
  std::call_once(once, [] {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return;
    if (hwloc_topology_load(topo) == 0) {
      hwloc_obj_t l2 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L2CACHE, 0);
      if (l2 && l2->attr) c.l2 = l2->attr->cache.size;
      for (hwloc_obj_type_t t : {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE}) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, t, 0);
        if (o && o->attr) { c.llc = o->attr->cache.size; break; }
      }
    }
    hwloc_topology_destroy(topo);
  });
  return c;
}
}  // namespace

size_t l2_cache_bytes() { return caches().l2; }
size_t llc_bytes() { return caches().llc; }

}  // namespace tessera
