#include "sync/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace tessera::sync {

bool futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000ull), static_cast<long>(timeout_ns % 1000000000ull)};
  long r = syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
  return !(r == -1 && errno == ETIMEDOUT);
}

void futex_wake(std::atomic<uint32_t>* word, int n) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, n, nullptr, nullptr, 0);
}

}  // namespace tessera::sync
