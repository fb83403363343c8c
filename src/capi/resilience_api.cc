// The C API of resilient mode (coll.h: tesseraCommRevoke, Agree, Shrink, Failed; docs/resilience.md), over
// coll/resilience.h: argument checks and result codes, the message kept for tesseraGetLastError.
#include <tessera/coll.h>

#include <algorithm>
#include <vector>

#include "capi/last_error.h"
#include "coll/handle.h"
#include "coll/resilience.h"
#include "pgas/resilient.h"

using namespace tessera;
using namespace tessera::coll;
using capi::to_result;

extern "C" {

tesseraResult_t tesseraCommRevoke(tesseraComm_t comm) {
  if (Status st = check_comm("tesseraCommRevoke", comm); !st.is_ok()) return to_result(st);
  return to_result(revoke(*comm->c));
}

tesseraResult_t tesseraCommAgree(tesseraComm_t comm, int* flag) {
  if (Status st = check_comm("tesseraCommAgree", comm); !st.is_ok()) return to_result(st);
  if (!flag) return to_result(invalid_arg("tesseraCommAgree: flag is null"));
  std::vector<int> failed;
  return to_result(agree(*comm->c, flag, &failed));
}

tesseraResult_t tesseraCommShrink(tesseraComm_t comm, tesseraComm_t* newcomm) {
  if (Status st = check_comm("tesseraCommShrink", comm); !st.is_ok()) return to_result(st);
  if (!newcomm) return to_result(invalid_arg("tesseraCommShrink: newcomm is null"));
  Result<tesseraComm*> r = open_shrink("tesseraCommShrink", comm);
  if (!r.is_ok()) return to_result(r.status());
  *newcomm = r.value();
  return tesseraSuccess;
}

tesseraResult_t tesseraCommGrow(tesseraComm_t comm, tesseraComm_t* newcomm) {
  if (!newcomm) return to_result(invalid_arg("tesseraCommGrow: newcomm is null"));
  Result<tesseraComm*> r = open_grow("tesseraCommGrow", comm);
  if (!r.is_ok()) return to_result(r.status());
  *newcomm = r.value();
  return tesseraSuccess;
}

tesseraResult_t tesseraIncarnation(int* incarnation) {
  if (!incarnation) return to_result(invalid_arg("tesseraIncarnation: incarnation is null"));
  *incarnation = static_cast<int>(pgas::incarnation());
  return tesseraSuccess;
}

tesseraResult_t tesseraCommFailed(const tesseraComm_t comm, int* pes, int max_pes, int* count) {
  if (Status st = check_comm("tesseraCommFailed", comm); !st.is_ok()) return to_result(st);
  if (!count) return to_result(invalid_arg("tesseraCommFailed: count is null"));
  if (max_pes < 0) return to_result(invalid_arg("tesseraCommFailed: max_pes is {}, below 0", max_pes));
  if (max_pes > 0 && !pes) return to_result(invalid_arg("tesseraCommFailed: pes is null with max_pes {}", max_pes));
  const std::vector<int>& f = known_failed(*comm->c);
  *count = static_cast<int>(f.size());
  std::copy_n(f.begin(), std::min<size_t>(f.size(), static_cast<size_t>(max_pes)), pes);
  return tesseraSuccess;
}

}  // extern "C"
