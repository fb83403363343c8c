// A job's control segment in private memory for the launcher's readers (hang report, health view), its
// where-areas written by the library's own recorder (sync/where.h) on behalf of each PE in turn.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "base/cpu.h"
#include "pgas/runtime.h"
#include "sync/where.h"

namespace tessera::run {

struct ControlSegment {
  explicit ControlSegment(int n) : bytes(pgas::JobControl::bytes_for(n)) {
    ctl = static_cast<pgas::JobControl*>(std::aligned_alloc(kCacheLine, (bytes + 63) & ~size_t{63}));
    std::memset(static_cast<void*>(ctl), 0, bytes);
    ctl->magic = pgas::JobControl::kMagic;
    ctl->n_pes = static_cast<uint32_t>(n);
    for (int pe = 0; pe < n; ++pe) ctl->state(pe)->store(pgas::JobControl::kInitialized);
  }
  ~ControlSegment() {
    sync::set_where_context({});
    std::free(ctl);
  }
  // Records a call of PE `pe`; `open`: it is still in it (else it returned).
  void call(int pe, sync::Call c, uint64_t seq, bool open, int start = 0, int stride = 1, int size = 4,
            uint16_t kind = 0) {
    sync::set_where_context({.all = ctl->where(0), .mine = ctl->where(pe), .deadline = &ctl->deadline_pe, .my_pe = pe});
    const bool recorded = sync::where_begin(c, kind, seq, 0, start, stride, size);
    ASSERT_TRUE(recorded);
    if (!open) sync::where_end(recorded);
  }
  void settle(int pe, const char* what, bool deadline = false) {
    sync::set_where_context({.all = ctl->where(0), .mine = ctl->where(pe), .deadline = &ctl->deadline_pe, .my_pe = pe});
    sync::where_settle(what, deadline);
  }
  size_t bytes;
  pgas::JobControl* ctl;
};

}  // namespace tessera::run
