// The exception of Tessera's C++ API: every C++ call that rejects its arguments or fails throws
// tessera::Error, with a message naming the value and the limit. tessera::coll::Error and
// tessera::kernel::Error are the same type, so one catch clause covers the PGAS, collective and kernel APIs.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <stdexcept>
#include <string>

namespace tessera {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resilient mode (docs/resilience.md): a call on a communicator stopped because a member failed
// (tesseraPeerFailed) or the communicator was revoked (tesseraRevoked). Comm::failed() names the failed
// members; Comm::shrink() makes the communicator of the survivors.
class PeerFailure : public Error {
 public:
  PeerFailure(const std::string& what, bool revoked) : Error(what), revoked_(revoked) {}
  bool revoked() const { return revoked_; }

 private:
  bool revoked_;
};

}  // namespace tessera
