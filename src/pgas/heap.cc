#include "pgas/heap.h"

#include <cstring>

#include "base/config.h"
#include "base/log.h"
#include "pgas/amo.h"
#include "pgas/barrier.h"
#include "pgas/resilient.h"
#include "pgas/layout.h"
#include "pgas/runtime.h"

namespace tessera::pgas {

// ---- Allocator: pure offset bookkeeping (unit-tested without a runtime) ----

void Allocator::reset(size_t capacity) {
  capacity_ = capacity;
  free_.clear();
  used_.clear();
  free_bytes_ = capacity;
  if (capacity) free_[0] = capacity;
}

size_t Allocator::allocate(size_t bytes, size_t align) {
  if (bytes == 0) bytes = 1;
  if (align < kCacheLine) align = kCacheLine;
  if (bytes > capacity_) return kNone;
  bytes = (bytes + kCacheLine - 1) & ~(kCacheLine - 1);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    size_t start = it->first, size = it->second;
    size_t aligned = (start + align - 1) & ~(align - 1);
    if (aligned < start || aligned - start > size || size - (aligned - start) < bytes) continue;
    free_.erase(it);
    if (aligned > start) free_[start] = aligned - start;
    size_t end = aligned + bytes, block_end = start + size;
    if (block_end > end) free_[end] = block_end - end;
    used_[aligned] = bytes;
    free_bytes_ -= bytes;
    return aligned;
  }
  return kNone;
}

size_t Allocator::release(size_t offset) {
  auto u = used_.find(offset);
  if (u == used_.end()) return 0;
  size_t size = u->second;
  used_.erase(u);
  free_bytes_ += size;
  auto [it, ok] = free_.emplace(offset, size);
  // Coalesce with the next and previous free blocks.
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
  return size;
}

size_t Allocator::block_size(size_t offset) const {
  auto u = used_.find(offset);
  return u == used_.end() ? 0 : u->second;
}

bool Allocator::resize_in_place(size_t offset, size_t new_bytes) {
  auto u = used_.find(offset);
  if (u == used_.end()) return false;
  if (new_bytes == 0) new_bytes = 1;
  new_bytes = (new_bytes + kCacheLine - 1) & ~(kCacheLine - 1);
  size_t old = u->second;
  if (new_bytes <= old) {
    if (new_bytes < old) {
      u->second = new_bytes;
      free_bytes_ += old - new_bytes;
      // Give the tail back (merging with a following free block).
      size_t tail = offset + new_bytes, tail_size = old - new_bytes;
      auto next = free_.find(offset + old);
      if (next != free_.end()) {
        tail_size += next->second;
        free_.erase(next);
      }
      free_[tail] = tail_size;
    }
    return true;
  }
  auto next = free_.find(offset + old);
  if (next == free_.end() || old + next->second < new_bytes) return false;
  size_t grow = new_bytes - old, rest = next->second - grow;
  free_.erase(next);
  if (rest) free_[offset + new_bytes] = rest;
  u->second = new_bytes;
  free_bytes_ -= grow;
  return true;
}

uint64_t Allocator::fingerprint() const {
  uint64_t h = 0xcbf29ce484222325ull ^ capacity_;
  for (auto& [o, s] : free_) {  // address order: the same walk on every PE
    h = (h ^ o) * 0x100000001b3ull;
    h = (h ^ s) * 0x100000001b3ull;
  }
  return h;
}

size_t Allocator::largest_free() const {
  size_t m = 0;
  for (auto& [o, s] : free_) m = std::max(m, s);
  return m;
}

// ---- The PE's symmetric heap ----

namespace {
const config::Var<bool> kCheckAlloc{
    "TESSERA_CHECK_ALLOC", true,
    "Check at every symmetric allocation and free that all PEs asked for the same thing (size, alignment, "
    "block); costs a cache line read per call, 0 turns it off"};
// OpenSHMEM: any value (even empty) turns these on; SMA_ names are the older spellings.
const config::Var<std::string> kShmemDebug{"SHMEM_DEBUG", "",
                                           "OpenSHMEM: when set (any value), print diagnostics (allocation "
                                           "failures) and check that all PEs allocate the same sizes",
                                           {"SMA_DEBUG"}};

std::mutex g_mu;
Allocator g_alloc;
uint64_t g_seq = 0;

char* user_base() { return rt().my_base + kReservedBytes; }

void* to_ptr(size_t off) { return off == Allocator::kNone ? nullptr : user_base() + off; }

bool checking() { return kCheckAlloc.get() || kShmemDebug.is_set(); }

// All PEs asked for the same thing? Each PE publishes its call (pgas::CallRecords, layout.h) before the
// barrier the call makes anyway and compares with PE 0's after it: a mismatch costs no extra synchronisation.
enum CallKind : uint64_t { kAllocate = 1, kResize = 2, kFree = 3 };

std::string describe_call(uint64_t kind, uint64_t a, uint64_t b) {
  switch (kind) {
    case kAllocate:
      return a == UINT64_MAX ? std::string("an allocation whose size overflows")
                             : fmt::format("an allocation of {} bytes aligned to {}", a, b);
    case kResize: return fmt::format("a resize of the block at heap offset {:#x} to {} bytes", a, b);
    case kFree:
      return a == UINT64_MAX ? std::string("a free of a null pointer")
                             : fmt::format("a free of the block at heap offset {:#x}", a);
  }
  return "no call";
}

void publish_call(uint64_t kind, uint64_t a, uint64_t b) {
  if (!checking() || rt().n_pes == 1) return;
  reserved_of(rt().my_base)->alloc_calls.publish(++g_seq, kind, a, b);
}

// After the call's barrier: compares this PE's record with PE 0's.
void compare_call(const char* routine) {
  Runtime& r = rt();
  if (!checking() || r.n_pes == 1 || r.my_pe == 0) return;
  uint64_t want[3], got[3];
  uint64_t root_seq;
  if (r.bases[0]) {
    root_seq = reserved_of(r.bases[0])->alloc_calls.read(g_seq, want);
  } else {  // PE 0 is on another host: the same words through its transport
    std::atomic<uint64_t>* rec = reserved_of(r.my_base)->alloc_calls.rec[g_seq % 2];
    for (int i = 0; i < 3; ++i) want[i] = atomic_fetch(routine, reinterpret_cast<uint64_t*>(&rec[i]), 0);
    root_seq = atomic_fetch(routine, reinterpret_cast<uint64_t*>(&rec[3]), 0);
  }
  if (root_seq == 0) return;  // PE 0 does not check (TESSERA_CHECK_ALLOC=0 there)
  reserved_of(r.my_base)->alloc_calls.read(g_seq, got);
  if (root_seq != g_seq)
    log::fatal("{}: this is symmetric heap call #{} on this PE but #{} on PE 0 (every PE must make the same "
               "allocation calls in the same order)",
               routine, g_seq, root_seq);
  if (want[0] != got[0] || want[1] != got[1] || want[2] != got[2])
    log::fatal("{}: this PE's call is {} but PE 0's is {} (symmetric allocations must be the same on every PE; "
               "TESSERA_CHECK_ALLOC=0 turns this check off)",
               routine, describe_call(got[0], got[1], got[2]), describe_call(want[0], want[1], want[2]));
}

// The barrier a call makes, then the check against PE 0's call. A replacement PE that waits to join makes
// neither: its allocations repeat its predecessor's, which the others made long ago (resilient.h).
void meet(const char* routine) {
  if (joining()) return;
  barrier_all_internal();
  compare_call(routine);
}

void report_failure(const char* routine, size_t bytes) {
  if (kShmemDebug.is_set() || log::level() >= log::Level::kInfo)
    log::write_line(log::Level::kWarn,
                    fmt::format("{}: cannot allocate {} bytes: symmetric heap has {} free in all, largest free "
                                "block {} (heap size {}; raise SHMEM_SYMMETRIC_SIZE)",
                                routine, bytes, g_alloc.bytes_free(), g_alloc.largest_free(),
                                config::format_size(rt().heap_size)));
}
}  // namespace

void heap_init() {
  std::lock_guard lk(g_mu);
  g_alloc.reset(rt().heap_size);
  g_seq = 0;
}
void heap_fini() {
  std::lock_guard lk(g_mu);
  g_alloc.reset(0);
}
uint64_t heap_fingerprint() {
  std::lock_guard lk(g_mu);
  return g_alloc.fingerprint();
}
size_t heap_bytes_free() {
  std::lock_guard lk(g_mu);
  return g_alloc.bytes_free();
}

void* sym_alloc_nobarrier(size_t bytes, size_t align) {
  std::lock_guard lk(g_mu);
  return to_ptr(g_alloc.allocate(bytes, align));
}
void sym_free_nobarrier(void* ptr) {
  if (!ptr) return;
  std::lock_guard lk(g_mu);
  g_alloc.release(static_cast<size_t>(static_cast<char*>(ptr) - user_base()));
}

namespace {
// Allocation without the closing barrier; `zero` clears the block before any peer may write to it.
void* align_before_barrier(size_t alignment, size_t bytes, const char* routine) {
  if (!is_initialized()) fail_not_initialized(routine);
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    log::warn("{}: alignment {} is not a power of two; returning null", routine, alignment);
    return nullptr;
  }
  if (alignment > kHeapAlignMax) {
    log::warn("{}: alignment {} exceeds the limit {} (the alignment of every PE's heap); returning null",
              routine, alignment, kHeapAlignMax);
    return nullptr;
  }
  if (bytes == 0) return nullptr;
  std::lock_guard lk(g_mu);
  void* p = to_ptr(g_alloc.allocate(bytes, alignment));
  if (!p) report_failure(routine, bytes);
  return p;
}
}  // namespace

void* sym_align(size_t alignment, size_t bytes, const char* routine) {
  void* p = align_before_barrier(alignment, bytes, routine);
  publish_call(kAllocate, bytes, alignment);
  meet(routine);
  return p;
}

void* sym_malloc(size_t bytes, const char* routine) { return sym_align(kCacheLine, bytes, routine); }

void* sym_calloc(size_t count, size_t size, const char* routine) {
  size_t bytes;
  void* p = nullptr;
  const bool overflow = __builtin_mul_overflow(count, size, &bytes);
  if (overflow) {
    if (!is_initialized()) fail_not_initialized(routine);
    log::warn("{}: {} elements of {} bytes overflow size_t (limit {}); returning null", routine, count, size,
              SIZE_MAX);
  } else {
    p = align_before_barrier(kCacheLine, bytes, routine);
    if (p) std::memset(p, 0, bytes);  // before the barrier: peers may write as soon as it opens
  }
  publish_call(kAllocate, overflow ? UINT64_MAX : bytes, kCacheLine);
  meet(routine);
  return p;
}

void* sym_realloc(void* ptr, size_t bytes, const char* routine) {
  if (!ptr) return sym_malloc(bytes, routine);
  if (bytes == 0) {
    sym_free(ptr, routine);
    return nullptr;
  }
  if (!is_initialized()) fail_not_initialized(routine);
  size_t off = static_cast<size_t>(static_cast<char*>(ptr) - user_base());
  void* result = nullptr;
  {
    std::lock_guard lk(g_mu);
    size_t old = g_alloc.block_size(off);
    if (old == 0) log::fatal("{}: {} is not a block returned by shmem_malloc", routine, ptr);
    if (g_alloc.resize_in_place(off, bytes)) {
      result = ptr;
    } else {
      size_t n = g_alloc.allocate(bytes, kCacheLine);
      if (n == Allocator::kNone) {
        report_failure(routine, bytes);
      } else {
        std::memmove(user_base() + n, ptr, std::min(old, bytes));
        g_alloc.release(off);
        result = user_base() + n;
      }
    }
  }
  publish_call(kResize, off, bytes);
  meet(routine);
  return result;
}

void sym_free(void* ptr, const char* routine) {
  if (!is_initialized()) fail_not_initialized(routine);
  // Quiet + barrier first: no PE may still be writing into the block.
  size_t off = static_cast<size_t>(static_cast<char*>(ptr) - user_base());
  publish_call(kFree, ptr ? off : UINT64_MAX, 0);
  meet(routine);
  if (!ptr) return;
  std::lock_guard lk(g_mu);
  if (static_cast<char*>(ptr) < user_base() || g_alloc.release(off) == 0)
    log::fatal("{}: {} is not a block returned by shmem_malloc (heap {}..{})", routine, ptr,
               static_cast<void*>(user_base()), static_cast<void*>(user_base() + rt().heap_size));
}

}  // namespace tessera::pgas
