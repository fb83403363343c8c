// The C++ API's argument checks that throw (include/tessera/tessera.hpp): defined in the library so that a
// check is one call with the runtime's bounds at hand, not a chain of C API calls from the header.
#include <tessera/error.hpp>
#include <tessera/tessera.hpp>

#include "base/log.h"
#include "pgas/runtime.h"

namespace tessera::detail {

void check_remote(const char* call, const void* addr, int pe) {
  if (!pgas::is_initialized()) [[unlikely]] pgas::fail_not_initialized(call);
  const int n = pgas::rt().n_pes;
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(n)) [[unlikely]]
    throw Error(fmt::format("{}: PE {} is out of range: the job has {} PEs (0..{})", call, pe, n, n - 1));
  if (!pgas::is_symmetric(addr, 1)) [[unlikely]]
    throw Error(fmt::format("{}: address {} is not symmetric (neither in the symmetric heap nor a global or static "
                            "variable)", call, addr));
}

}  // namespace tessera::detail
