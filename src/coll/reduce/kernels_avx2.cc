// Kernel table for CPUs with AVX2, FMA-free arithmetic and F16C conversions (built with -mavx2 -mf16c).
#define TESSERA_KERNEL_NS avx2
#include "coll/reduce/kernels-inl.h"

namespace tessera::coll {
const avx2::ReduceFn* reduce_table_avx2() { return avx2::kTable; }
}  // namespace tessera::coll
