// The C collective and kernel APIs' error text (tesseraGetLastError): one per thread, set by every call that
// fails, so the kernel calls of tessera/kernel.h and the collectives of coll.h report alike.
#pragma once
#include <tessera/coll.h>

#include <string>

#include "base/status.h"

namespace tessera::capi {

std::string& last_error();
// tesseraSuccess for an OK status; otherwise its result code, its message kept as the last error.
tesseraResult_t to_result(const Status& st);

}  // namespace tessera::capi
