// The exception of Tessera's C++ API: every C++ call that rejects its arguments or fails throws
// tessera::Error, with a message naming the value and the limit. tessera::coll::Error and
// tessera::kernel::Error are the same type, so one catch clause covers the PGAS, collective and kernel APIs.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <stdexcept>

namespace tessera {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tessera
