// Cross-process futex on 32-bit words that live in shared mappings (so no FUTEX_PRIVATE_FLAG).
#pragma once
#include <atomic>
#include <cstdint>

namespace tessera::sync {

// Sleeps while *word == expected, at most timeout_ns. Returns false on timeout, true otherwise (woken,
// value changed, or interrupted: callers always re-check their condition).
bool futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns);
// Wakes up to n sleepers on word.
void futex_wake(std::atomic<uint32_t>* word, int n = 0x7fffffff);

}  // namespace tessera::sync
