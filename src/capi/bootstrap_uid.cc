// tessera_bootstrap_uid (tessera/shmem_extra.h): the unique-id form of the TCP rendezvous.
#include <shmem.h>

#include <cstring>
#include <string>

#include "base/log.h"
#include "bootstrap/tcp.h"

using namespace tessera;

extern "C" {

int tessera_bootstrap_uid(char* out, size_t size, const char* host) {
  if (!out) {
    log::write_line(log::Level::kError, "tessera_bootstrap_uid: out is a null pointer");
    return -1;
  }
  std::string h = host ? host : "";
  // Checked before any socket exists, against the longest id this host can give: "tcp://" HOST ":" PORT
  // (at most 5 digits) "/" SECRET, and the terminating NUL.
  const size_t longest = 6 + (h.empty() ? 253 : h.size()) + 1 + 5 + 1 + bootstrap::kSecretChars + 1;
  if (size < longest) {
    log::write_line(log::Level::kError,
                    fmt::format("tessera_bootstrap_uid: the buffer has {} bytes; an id for host {:?} needs up to {} "
                                "(TESSERA_BOOTSTRAP_UID_SIZE, {}, is always enough)",
                                size, h.empty() ? "(this machine's name)" : h, longest, TESSERA_BOOTSTRAP_UID_SIZE));
    return -1;
  }
  Result<std::string> id = bootstrap::tcp::make_unique_id(h);
  if (!id.is_ok()) {
    log::write_line(log::Level::kError, id.status().message());
    return -2;
  }
  std::memcpy(out, id.value().c_str(), id.value().size() + 1);  // copy-ok: unique id string
  return 0;
}

}  // extern "C"
