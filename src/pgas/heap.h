// The symmetric heap allocator.
//
// Allocation is collective and deterministic: every PE runs the same allocator over the same sequence of
// calls, so every PE gets the same offset and a remote address is peer_base + offset (no exchange needed).
// First fit over an address-ordered free list, with coalescing on free; every block is aligned to at least
// a cache line. malloc/calloc/align/realloc/free end with a barrier over all PEs, as the specification asks.
//
// Errors: exhaustion returns null (with SHMEM_DEBUG, a line says the size asked and what is left); a size
// whose arithmetic overflows returns null with a message. Every allocation, resize and free also checks
// that all PEs asked for the same thing (size and alignment, or block) and ends the job naming the PE and
// both calls when they differ: each PE publishes its call before the barrier the call makes anyway and
// compares with PE 0's after it, so the check adds no synchronisation (TESSERA_CHECK_ALLOC=0 turns it off).
// Thread safety: calls from several threads are serialised by a mutex (collective ordering stays the
// caller's duty, as in the specification).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "base/status.h"

namespace tessera::pgas {

class Allocator {
 public:
  // Manages offsets [0, capacity).
  explicit Allocator(size_t capacity = 0) { reset(capacity); }
  void reset(size_t capacity);

  // Offset of a block of `bytes` aligned to `align` (a power of two), or kNone.
  static constexpr size_t kNone = ~size_t{0};
  size_t allocate(size_t bytes, size_t align);
  // Returns the size of the freed block, or 0 when `offset` is not an allocated block.
  size_t release(size_t offset);
  // Size of the block at offset, or 0.
  size_t block_size(size_t offset) const;
  // Grows or shrinks in place when the neighbouring space allows; false otherwise.
  bool resize_in_place(size_t offset, size_t new_bytes);

  size_t capacity() const { return capacity_; }
  size_t bytes_free() const { return free_bytes_; }
  size_t largest_free() const;
  // A hash of the blocks in use: equal on two PEs when they made the same calls.
  uint64_t fingerprint() const;

 private:
  size_t capacity_ = 0;
  size_t free_bytes_ = 0;
  std::map<size_t, size_t> free_;               // offset -> size, address ordered
  std::unordered_map<size_t, size_t> used_;     // offset -> size
};

// Collective symmetric allocation on the PE's heap (user part of the segment). Null on failure.
void* sym_malloc(size_t bytes, const char* routine = "shmem_malloc");
void* sym_calloc(size_t count, size_t size, const char* routine = "shmem_calloc");
void* sym_align(size_t alignment, size_t bytes, const char* routine = "shmem_align");
void* sym_realloc(void* ptr, size_t bytes, const char* routine = "shmem_realloc");
void sym_free(void* ptr, const char* routine = "shmem_free");

// Local (non-collective) variants without the barrier, for internal setup where the caller provides the
// synchronisation (the sequence must still be identical on every PE).
void* sym_alloc_nobarrier(size_t bytes, size_t align);
void sym_free_nobarrier(void* ptr);

// Set up at init (after the segments are mapped) and torn down at finalize.
void heap_init();
void heap_fini();
size_t heap_bytes_free();
uint64_t heap_fingerprint();

}  // namespace tessera::pgas
