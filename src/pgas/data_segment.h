// Symmetric data segment: the executable's global and static variables are symmetric objects in
// OpenSHMEM (`static long pSync[...]; shmem_long_put(&x, ...)`). At init the writable pages of the
// executable (.data and .bss, after the read-only-after-relocation part) are copied into a shared-memory
// segment that is then mapped over them in place (MAP_FIXED), and every peer maps that segment too.
// Values are preserved; from then on each PE's globals live in its own segment, reachable by its peers.
// Limitation: a child made by fork() shares these pages with its parent until it calls exec.
// Disabled with TESSERA_SYMMETRIC_DATA=0 (globals are then not remotely accessible).
#pragma once
#include <cstddef>
#include <string>

#include "base/status.h"

namespace tessera::pgas {

struct DataSegment {
  char* base = nullptr;
  size_t size = 0;
};

// Finds the executable's writable data range (page aligned). Empty when there is none.
DataSegment find_data_segment();
// Moves `seg` into the shared object `name` (created here, mode 0600). With `keep_fd`, its descriptor stays
// open and is returned there (shm::create's contract).
Status share_data_segment(const DataSegment& seg, const std::string& name, int* keep_fd = nullptr);
bool symmetric_data_enabled();

}  // namespace tessera::pgas
