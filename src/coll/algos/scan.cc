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
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    // My piece is staged before I write my output (in place, the output is my input).
    stage(ex.comm(), ex.out(c.step), cptr(a.send, c.begin, es), c.count * es);
    ex.publish(c.step);
    char* out = mptr(a.recv, c.begin, es);
    if (upto == 0) {
      std::memset(out, 0, c.count * es);
      continue;
    }
    Srcs s;
    for (int m = 0; m < upto; ++m) s.add(ex.in(m, c.step));
    reduce(out, s.p, upto, c.count, a.dtype, a.op, 0);
  }
  return chunks.steps();
}
}  // namespace

uint64_t inscan_direct(Exec& ex, const Args& a) { return scan_direct(ex, a, true); }
uint64_t exscan_direct(Exec& ex, const Args& a) { return scan_direct(ex, a, false); }

}  // namespace tessera::coll::algos
