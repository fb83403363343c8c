// POSIX shared-memory segments: the symmetric heaps and the job control segment.
//
// Names are "/tessera-<job id>-<what>" where the job id is random (unpredictable), objects are created with
// O_EXCL and mode 0600 (private to the job's user), and mappings use MAP_NORESERVE so a large heap costs
// nothing until touched. Every object is unlinked as soon as all PEs have mapped it; tessera-run removes
// any leftover of its job whatever happened (see tools/run).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::transport::shm {

std::string segment_name(const std::string& job_id, const std::string& what);
// Directory prefix of every object of a job in /dev/shm (for cleanup).
std::string segment_prefix(const std::string& job_id);
// The inverse of segment_name for a /dev/shm entry (no leading '/'): the job id when `entry` is the object
// `what` of some job, else an empty string.
std::string job_of_segment(std::string_view entry, std::string_view what);
// The job control segment's `what` (tools/run makes it, PEs open it).
inline constexpr const char* kControlSegment = "ctl";

// Creates (exclusively) and maps a segment of `bytes`. With `align` (a power of two), the mapping is placed
// so that its address plus `skew` is a multiple of `align`: the symmetric heap starts `skew` bytes into its
// segment, and an offset aligned there is then an address aligned alike on every PE (shmem_align).
// With `keep_fd`, the object's descriptor stays open and is returned there (the caller closes it): a PE
// that may be replaced publishes it, and the replacement maps the object through it once its name is gone
// (open_map_of).
Result<void*> create(const std::string& name, size_t bytes, size_t skew = 0, size_t align = 0,
                     int* keep_fd = nullptr);
// Maps an existing segment; its size must be `bytes`, and it must belong to this uid and be closed to other
// users (mode 600), as create() makes it: an object another user planted under the name is refused.
Result<void*> open_map(const std::string& name, size_t bytes);
// Maps the object a live process of this uid holds open as descriptor `fd` (/proc/PID/fd/FD), with the checks
// of open_map: how a replacement PE maps its peers' segments, whose names were removed at start-up.
Result<void*> open_map_of(int pid, int fd, size_t bytes);
Status unlink(const std::string& name);
void unmap(void* addr, size_t bytes);
// Anonymous private mapping (a job of one PE), placed like create() with `skew` and `align`.
Result<void*> map_private(size_t bytes, size_t skew = 0, size_t align = 0);

}  // namespace tessera::transport::shm
