#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace tessera {

const char* code_name(Code c) {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kOutOfMemory: return "out of memory";
    case Code::kTimeout: return "timeout";
    case Code::kAborted: return "aborted";
    case Code::kPeerFailed: return "peer failed";
    case Code::kRevoked: return "revoked";
    case Code::kSystem: return "system error";
    case Code::kUnsupported: return "unsupported";
    case Code::kInternal: return "internal error";
  }
  return "unknown";
}

Status sys_error(const std::string& what) {
  int e = errno;
  return Status(Code::kSystem, fmt::format("{}: {} (errno {})", what, std::strerror(e), e));
}

}  // namespace tessera
