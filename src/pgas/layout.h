// Layout of the reserved area at the start of every PE's symmetric segment.
//
// The area is symmetric like the rest of the heap (same offset on every PE), so internal synchronisation
// objects are addressed exactly like user objects: the team barrier of slot s lives in the reserved area
// of the team's first PE, and every member reaches it through the mapping of that PE's segment.
// The user heap starts at kReservedBytes.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/cpu.h"

namespace tessera::pgas {

inline constexpr int kMaxTeams = 64;          // teams alive at once on a PE (incl. world and shared)
inline constexpr size_t kReservedBytes = 64 * 1024;
// Every PE maps its own heap so that the user heap (kReservedBytes into the segment) starts at a multiple of
// this: a symmetric offset aligned to it is then an aligned address on every PE. It bounds shmem_align.
inline constexpr size_t kHeapAlignMax = size_t{1} << 30;

// Synchronisation state of one team slot; used in the segment of the team's first PE.
struct TeamSync {
  alignas(kCacheLine) std::atomic<uint64_t> arrive;        // barrier arrivals (monotonic)
  alignas(kCacheLine) std::atomic<uint64_t> gen;           // barriers completed (monotonic)
  alignas(kCacheLine) std::atomic<uint64_t> split_mask[2]; // slot agreement during splits (parity)
  alignas(kCacheLine) std::atomic<uint64_t> pe_epoch;      // (own segment) last barrier this PE entered
};

inline constexpr size_t kCollScratchBytes = 128;  // a published value, then two call records (coll_group.h)

struct Reserved {
  static constexpr uint64_t kMagic = 0x54455353'48454150ull;  // "TESSHEAP"
  uint64_t magic;
  uint64_t heap_size;
  // The last symmetric allocation calls, by parity of their sequence number: {kind, a, b, sequence}
  // (src/pgas/heap.cc, the allocation check).
  alignas(kCacheLine) std::atomic<uint64_t> alloc_check[2][4];
  TeamSync teams[kMaxTeams];
  // One line per team slot for the OpenSHMEM team collectives (src/capi/coll_group.h): each PE publishes
  // per-call values there (e.g. its element count in collect) for the members to read.
  alignas(kCacheLine) char coll_scratch[kMaxTeams][kCollScratchBytes];
};
static_assert(sizeof(Reserved) <= kReservedBytes, "reserved area too small");

inline Reserved* reserved_of(char* base) { return reinterpret_cast<Reserved*>(base); }

}  // namespace tessera::pgas
