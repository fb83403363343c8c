#include "base/cpu.h"

#include <hwloc.h>
#include <sched.h>

#include <ctime>
#include <mutex>

namespace tessera {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
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
