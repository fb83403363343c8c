// Kernel table for any x86-64 CPU (SSE2); float16 conversions in software.
#define TESSERA_KERNEL_NS base
#include "coll/reduce/kernels-inl.h"

namespace tessera::coll {
const base::ReduceFn* reduce_table_base() { return base::kTable; }
}  // namespace tessera::coll
