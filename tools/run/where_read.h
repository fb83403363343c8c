// The PEs' where-areas (sync/where.h) copied out of a job's control segment, and the words for them: shared
// by the hang report (hang_report.h) and the health view (health.h). Reads take no lock (where.h says why a
// diagnostic can afford that) and never write the segment.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pgas/runtime.h"
#include "sync/where.h"

namespace tessera::run::where {

using sync::Call;

// One recorded call, copied out of the shared area.
struct Entry {
  Call call = Call::kNone;
  uint16_t detail = 0;
  int start = 0, stride = 0, size = 0;
  uint64_t seq = 0, arg = 0, start_ns = 0;

  bool same_call(const Entry& o) const {
    return call == o.call && detail == o.detail && start == o.start && stride == o.stride && size == o.size;
  }
};

// One PE's area, copied out.
struct Snap {
  uint32_t state = 0;
  bool in_call = false;
  bool settled = false;
  std::vector<Entry> calls;  // newest first
  std::string detail;
  std::vector<int> awaited;  // PEs this one waits for (calls over a strided team)
  bool peer_unknown = false; // in a wait that names no PE
};


Snap read_pe(pgas::JobControl* ctl, int pe);
// "PE 3" / "PEs 1,2"
std::string pe_list(const std::vector<int>& pes);
// "shmem_barrier_all (world, team sync 12)", "allreduce 8 B (world, call #5)"
std::string call_text(const Entry& e, int n_pes);
// Whom a wait that names no PE waits for, in words.
const char* unnamed_text(const Snap& s);
// "2.0 s"
std::string ago(uint64_t then, uint64_t now);
// Whom PE `pe` waits for: the members of its call over a strided team not in that call (or a later one);
// *unknown when it is in a call that names no PE.
std::vector<int> awaited_by(const std::vector<Snap>& all, int pe, bool* unknown);
// "is not in a Tessera call (last: ...)" / "is in ... for 2.0 s"
std::string state_text(const Snap& s, int n_pes, uint64_t now);

}  // namespace tessera::run::where
