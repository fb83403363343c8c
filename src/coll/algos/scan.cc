// Scans (inclusive and exclusive prefix reductions) through staging, for buffers that are not symmetric
// (symmetric ones: algos/symmetric.cc). Per chunk: every member stages its piece and member r folds the
// pieces of members 0..r (inclusive) or 0..r-1 (exclusive) in rank order; the exclusive scan leaves zeros
// on member 0. 1 step per chunk.
#include <algorithm>
#include <cstring>

#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {
namespace {
uint64_t scan_direct(Exec& ex, const Args& a, bool inclusive) {
  const int r = ex.rank(), upto = inclusive ? r + 1 : r;
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    // My piece is staged before I write my output (in place, the output is my input).
    stage(ex.comm(), ex.out(k), cptr(a.send, c0, es), cnt * es);
    ex.publish(k);
    char* out = mptr(a.recv, c0, es);
    if (upto == 0) {
      std::memset(out, 0, cnt * es);
      continue;
    }
    Srcs s;
    for (int m = 0; m < upto; ++m) s.add(ex.in(m, k));
    reduce(out, s.p, upto, cnt, a.dtype, a.op, 0);
  }
  return nc;
}
}  // namespace

uint64_t inscan_direct(Exec& ex, const Args& a) { return scan_direct(ex, a, true); }
uint64_t exscan_direct(Exec& ex, const Args& a) { return scan_direct(ex, a, false); }

}  // namespace tessera::coll::algos
