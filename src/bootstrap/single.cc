// A job of one PE: a program started without a launcher.
#include <cstring>

#include "bootstrap/bootstrap.h"

namespace tessera::bootstrap {
namespace {
bool detect() { return true; }
Status init(JobInfo* out) {
  *out = JobInfo{};
  return Status::ok();
}
Status allgather(const void* mine, void* all, size_t bytes) {
  if (bytes) std::memcpy(all, mine, bytes);  // copy-ok: start-up exchange
  return Status::ok();
}
Status barrier() { return Status::ok(); }
void finalize() {}
}  // namespace

const Backend kSingleBackend{"single", detect, init, allgather, barrier, finalize};

}  // namespace tessera::bootstrap
