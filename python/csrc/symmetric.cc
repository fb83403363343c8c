// The symmetric tensor pool (symmetric.h).
#include "symmetric.h"

#include <c10/util/Exception.h>
#include <shmem.h>

#include <map>
#include <mutex>

namespace tessera_torch {
namespace {
constexpr size_t kAlign = 256;  // a cache line multiple, as good as any allocator's for vector code

struct Pool {
  std::mutex mu;
  char* base = nullptr;
  size_t bytes = 0;
  size_t free_bytes = 0;
  std::map<size_t, size_t> free;  // offset -> length, coalesced
};
Pool g_pool;

void give_back(size_t off, size_t len) {
  std::lock_guard lk(g_pool.mu);
  g_pool.free_bytes += len;
  auto next = g_pool.free.lower_bound(off);
  if (next != g_pool.free.end() && off + len == next->first) {
    len += next->second;
    next = g_pool.free.erase(next);
  }
  if (next != g_pool.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return;
    }
  }
  g_pool.free.emplace(off, len);
}
}  // namespace

void pool_reserve(size_t bytes) {
  std::lock_guard lk(g_pool.mu);
  if (g_pool.base) return;
  constexpr size_t kLeast = size_t{16} << 20;
  while (bytes >= kLeast) {
    // Every PE has the same heap and makes the same calls, so all succeed or fail together.
    if (void* p = shmem_malloc(bytes)) {
      g_pool.base = static_cast<char*>(p);
      g_pool.bytes = g_pool.free_bytes = bytes;
      g_pool.free.emplace(0, bytes);
      return;
    }
    bytes /= 2;
  }
}

size_t pool_bytes() { return g_pool.bytes; }
char* pool_base() {
  std::lock_guard lk(g_pool.mu);
  return g_pool.base;
}
size_t pool_free_bytes() {
  std::lock_guard lk(g_pool.mu);
  return g_pool.free_bytes;
}

at::Tensor symmetric_empty(at::IntArrayRef sizes, at::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t s : sizes) {
    TORCH_CHECK(s >= 0, "tessera_torch.empty: negative dimension ", s);
    numel *= s;
  }
  const size_t want = (static_cast<size_t>(numel) * c10::elementSize(dtype) + kAlign - 1) / kAlign * kAlign;
  const size_t len = want ? want : kAlign;
  size_t off = 0;
  {
    std::lock_guard lk(g_pool.mu);
    TORCH_CHECK(g_pool.base, "tessera_torch.empty: no symmetric pool: init_process_group(\"tessera\") first");
    auto it = g_pool.free.begin();
    while (it != g_pool.free.end() && it->second < len) ++it;
    if (it == g_pool.free.end()) {
      size_t largest = 0;
      for (const auto& [o, l] : g_pool.free) largest = std::max(largest, l);
      TORCH_CHECK(false, "tessera_torch.empty: ", len, " bytes do not fit in the symmetric pool (", g_pool.bytes,
                  " bytes, ", g_pool.free_bytes, " free, largest free block ", largest,
                  "); raise SHMEM_SYMMETRIC_SIZE (the pool is half of the heap)");
    }
    off = it->first;
    const size_t rest = it->second - len;
    g_pool.free.erase(it);
    if (rest) g_pool.free.emplace(off + len, rest);
    g_pool.free_bytes -= len;
  }
  return at::from_blob(
      g_pool.base + off, sizes, [off, len](void*) { give_back(off, len); }, at::TensorOptions().dtype(dtype));
}

bool is_symmetric(const at::Tensor& t) {
  if (!g_pool.base || !t.has_storage()) return false;
  const char* p = static_cast<const char*>(t.storage().data());
  return p >= g_pool.base && p < g_pool.base + g_pool.bytes;
}

}  // namespace tessera_torch
