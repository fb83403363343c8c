// Algorithms on the LL protocol (engine.h: ll_out/ll_publish/ll_in): small allreduce and the barrier.
// One wait per peer and no step counters; the payload is at most kLLBytes.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

#include <cstring>

namespace tessera::coll::algos {

// Every member publishes its input in its LL buffer, then reduces all n buffers in rank order (canonical:
// the same bits as oneshot and direct).
namespace {
// A float sum of a few elements (the payload shares the flag's line), folded here in rank order: the same
// left fold, element by element, as the reduction kernels (reduce/), so the same bits, without the
// table call and the vector loop's setup, which cost about as much as the rest of the call.
template <typename T>
void sum_small(Exec& ex, const Args& a, size_t bytes) {
  T acc[kLLInline / sizeof(T)];
  std::memcpy(acc, ex.ll_in(0, bytes), bytes);
  for (int m = 1; m < ex.size(); ++m) {
    T v[kLLInline / sizeof(T)];
    std::memcpy(v, ex.ll_in(m, bytes), bytes);
    for (size_t i = 0; i < a.count; ++i) acc[i] += v[i];
  }
  std::memcpy(a.recv, acc, bytes);
}
}  // namespace

uint64_t allreduce_ll(Exec& ex, const Args& a) {
  const int n = ex.size();
  if (a.count == 0) return 0;
  // publish my input
  const size_t bytes = a.count * esize(a);
  ex.ll_put(a.send, bytes);
  if (bytes <= kLLInline && a.op == Op::kSum && n > 1) {
    if (a.dtype == DType::kFloat32) return sum_small<float>(ex, a, bytes), 0;
    if (a.dtype == DType::kFloat64) return sum_small<double>(ex, a, bytes), 0;
  }
  // reduce every member's input, in rank order
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(ex.ll_in(m, bytes));
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 0;
}

// Publish my flag (the call number), see every member's.
uint64_t barrier_ll(Exec& ex, const Args&) {
  ex.ll_out(0);
  ex.ll_publish();
  for (int m = 0; m < ex.size(); ++m)
    if (m != ex.rank()) ex.ll_in(m, 0);
  return 0;
}

}  // namespace tessera::coll::algos
