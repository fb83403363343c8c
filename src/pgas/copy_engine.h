// The copy engine: a helper thread of each PE that shares large non-blocking transfers with the caller,
// the role of the SDMA engines that sit beside an NPU's AI Cores.
//
// A put or get of at least TESSERA_COPY_ENGINE_MIN bytes is cut into chunks that the caller
// and the engine claim one at a time (a compare-and-swap on the job's claim word). The caller copies
// chunks until none is left to claim and returns; the engine keeps working through queued jobs while the
// caller goes on to its next call (a blocking put or get waits for its own job before it returns). When the engine is not running (descheduled, or the host has no spare
// core) the caller simply copies every chunk itself, so the engine can only add bandwidth, never hold a
// transfer back. fence and quiet complete every queued job (the caller helps with unclaimed chunks, then
// waits for the few in flight), as does anything that implies quiet (barriers, lock release, finalize).
//
// A test hook, TESSERA_TEST_ENGINE_HOLD_NS (with TESSERA_COPY_ENGINE=always), makes callers leave the last
// chunk of every job to the engine, which holds it that long before copying: a non-blocking put then stays
// incomplete past its call for certain, so an ordering test fails whenever a fence or quiet is missing.
//
// The last chunk of a put job wakes the target's waiters on the bytes it covers (sync::notify_range), as a
// direct put does.
//
// The engine only helps when a core is spare, so a transfer goes to it only while fewer PEs of the job are
// awake (not asleep in a wait) than this host has CPUs: a peer spinning for the data being put needs its
// CPU more than the engine does. When the engine is woken on the caller's own CPU it leaves the job to
// the caller and pauses itself for 2 ms; when it is preempted in the middle of chunks so often that callers
// spend more than 5 % of their time waiting for it, callers stop using it for a back-off period (100 ms,
// doubling up to 2 s while that recurs).
//
// On by default (TESSERA_COPY_ENGINE=auto) when the PEs of the job fit on this host's CPUs; off when they
// are oversubscribed, where a second copying thread only takes CPU from a PE.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/cpu.h"

namespace tessera::pgas::engine {

// Jobs queued and not yet retired by a drain (head - tail); read on every fence/quiet.
extern std::atomic<uint64_t> g_pending;
// Transfers of at least this many bytes go through the engine; SIZE_MAX when it is off.
extern size_t g_min_bytes;

// Starts the thread when the configuration asks for it (called once by init, after the wait context is
// installed). n_local: PEs of the job on this machine (pgas::Runtime::machine_pes), which share its CPUs.
void start(int n_local);
// Completes every job and stops the thread (called by finalize).
void stop();

// Queues a copy of `bytes` from src to dst, copies chunks until none is left to claim, and returns. For a
// put, notify_pe >= 0 and watch_off is the symmetric offset of dst (for notify_range); for a get,
// notify_pe is -1.
void submit(char* dst, const char* src, size_t bytes, int notify_pe, uint64_t watch_off);

// A blocking transfer shared with the engine: as submit(), then waits until this job is copied.
void copy(char* dst, const char* src, size_t bytes, int notify_pe, uint64_t watch_off);

// Completes every job queued so far (by any thread of this PE).
void drain();
inline void drain_if_pending() {
  if (g_pending.load(std::memory_order_acquire) != 0) [[unlikely]] drain();
}
// Until this time (now_ns) callers copy alone: the engine was found preempted (see copy_engine.cc).
extern std::atomic<uint64_t> g_paused_until_ns;
// Whether this host has a CPU that no PE of the job is using now: PEs asleep in a wait do not count.
bool spare_cpu();
inline bool takes(size_t bytes) {
  return bytes >= g_min_bytes && now_ns() >= g_paused_until_ns.load(std::memory_order_relaxed) && spare_cpu();
}

// For tests and diagnostics: whether the thread runs, how many chunks it (not the callers) copied, and
// how many times a caller found it preempted.
bool running();
uint64_t chunks_by_engine();
uint64_t stalls();

}  // namespace tessera::pgas::engine
