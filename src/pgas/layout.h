// Layout of the reserved area at the start of every PE's symmetric segment.
//
// The area is symmetric like the rest of the heap (same offset on every PE), so internal synchronisation
// objects are addressed exactly like user objects: the team barrier of slot s lives in the reserved area
// of the team's first PE, and every member reaches it through the mapping of that PE's segment.
// The user heap starts at kReservedBytes.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/cpu.h"

namespace tessera::pgas {

inline constexpr int kMaxTeams = 64;          // teams alive at once on a PE (incl. world and shared)
inline constexpr size_t kReservedBytes = 64 * 1024;
inline constexpr int kMaxSyncRounds = 24;     // dissemination rounds: teams of up to 2^24 PEs
// Every PE maps its own heap so that the user heap (kReservedBytes into the segment) starts at a multiple of
// this: a symmetric offset aligned to it is then an aligned address on every PE. It bounds shmem_align.
inline constexpr size_t kHeapAlignMax = size_t{1} << 30;

// Synchronisation state of one team slot; used in the segment of the team's first PE (a team within one
// host) or in every member's own segment (a team that spans hosts).
struct TeamSync {
  alignas(kCacheLine) std::atomic<uint64_t> arrive;        // barrier arrivals (monotonic)
  alignas(kCacheLine) std::atomic<uint64_t> gen;           // barriers completed (monotonic)
  alignas(kCacheLine) std::atomic<uint64_t> split_mask[2]; // slot agreement during splits (parity)
  // (own segment) the last barrier this PE entered, in the line of its parity: a flat barrier (pgas/team.cc)
  // takes the line of its next sync ahead of time, which no member reads any more by then.
  struct alignas(kCacheLine) Epoch {
    std::atomic<uint64_t> v;
  };
  Epoch pe_epoch[2];
  uint64_t latest_epoch() const {
    return std::max(pe_epoch[0].v.load(std::memory_order_relaxed), pe_epoch[1].v.load(std::memory_order_relaxed));
  }
  // (own segment) teams with members on other hosts: arrivals of dissemination round k (pgas/team.cc)
  alignas(kCacheLine) std::atomic<uint64_t> rounds[kMaxSyncRounds];
};

// The records of the consistency checks that ride on a barrier the checked call makes anyway (symmetric
// allocations): each PE publishes {what, a, b, sequence} for its call before the
// barrier, and after it compares with the first member's record. Two records by parity of the sequence:
// the first member writes record s%2 again only at call s+2, past a barrier that every member reaches only
// after reading record s%2. The barrier's release/acquire orders a record before its readers.
struct CallRecords {
  std::atomic<uint64_t> rec[2][4];

  void publish(uint64_t seq, uint64_t what, uint64_t a, uint64_t b) {
    std::atomic<uint64_t>* r = rec[seq % 2];
    r[0].store(what, std::memory_order_relaxed);
    r[1].store(a, std::memory_order_relaxed);
    r[2].store(b, std::memory_order_relaxed);
    r[3].store(seq, std::memory_order_relaxed);
  }
  // The record of the writer's call of sequence parity seq%2: {what, a, b} and the writer's sequence
  // number, 0 when it published nothing (it does not check).
  uint64_t read(uint64_t seq, uint64_t out[3]) const {
    const std::atomic<uint64_t>* r = rec[seq % 2];
    for (int i = 0; i < 3; ++i) out[i] = r[i].load(std::memory_order_relaxed);
    return r[3].load(std::memory_order_relaxed);
  }
};

struct Reserved {
  static constexpr uint64_t kMagic = 0x54455353'48454150ull;  // "TESSHEAP"
  uint64_t magic;
  uint64_t heap_size;
  alignas(kCacheLine) CallRecords alloc_calls;  // this PE's symmetric allocations (src/pgas/heap.cc)
  TeamSync teams[kMaxTeams];
};
static_assert(sizeof(Reserved) <= kReservedBytes, "reserved area too small");

inline Reserved* reserved_of(char* base) { return reinterpret_cast<Reserved*>(base); }

}  // namespace tessera::pgas
