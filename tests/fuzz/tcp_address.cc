// TESSERA_BOOTSTRAP's address (bootstrap/tcp_wire.h): tcp://HOST:PORT and tcp://HOST:PORT/SECRET, the
// secret's check, and the masked form the job's listings print. Properties: an accepted address has a
// host of 1..kMaxHostChars without ':', '[' or ']', a port 1..65535 and a valid secret or none, and
// rebuilding its text parses to the same address; no error message and no masked text ever shows a secret.
#include <string>

#include <fmt/format.h>

#include "bootstrap/tcp_wire.h"
#include "fuzz.h"

namespace tcp = tessera::bootstrap::tcp;

namespace {
// Whether `s` occurs in `text` more than once (then a message may print it as part of something else).
bool occurs_twice(std::string_view text, std::string_view s) {
  size_t first = text.find(s);
  return first != std::string_view::npos && text.find(s, first + 1) != std::string_view::npos;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tcp::parse_address("TESSERA_BOOTSTRAP", text);
  // The would-be secret: what follows the first '/' after the scheme.
  std::string_view secret;
  if (text.substr(0, 6) == "tcp://")
    if (size_t slash = text.find('/', 6); slash != std::string_view::npos) secret = text.substr(slash + 1);
  // A secret is hex digits; a shorter or other one could be words the message prints anyway.
  const bool secret_checkable = secret.size() >= 8 && !occurs_twice(text, secret) &&
                                secret.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
  if (secret_checkable) FUZZ_CHECK(tcp::masked(text).find(secret) == std::string::npos);
  if (!r.is_ok()) {
    const std::string msg = r.status().message();
    FUZZ_CHECK(msg.find("TESSERA_BOOTSTRAP") != std::string::npos);
    // The message shows the masked address escaped ({:?}); escapes such as \x00 put hex digits next to
    // the host's own text, which can then spell the secret without the secret being printed.
    const bool shown_spells_it = fmt::format("{:?}", tcp::masked(text)).find(secret) != std::string::npos;
    if (secret_checkable && !shown_spells_it) FUZZ_CHECK(msg.find(secret) == std::string::npos);
    return 0;
  }
  const tcp::Address& a = r.value();
  FUZZ_CHECK(!a.host.empty() && a.host.size() <= tcp::kMaxHostChars);
  FUZZ_CHECK(a.host.find_first_of(":[]") == std::string::npos);
  FUZZ_CHECK(a.port >= 1);
  FUZZ_CHECK(a.secret.empty() || tcp::check_secret("fuzz", a.secret).is_ok());
  FUZZ_CHECK(a.secret == secret);
  const std::string again_text = "tcp://" + a.where() + (a.secret.empty() ? "" : "/" + a.secret);
  auto again = tcp::parse_address("TESSERA_BOOTSTRAP", again_text);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again.value().host == a.host && again.value().port == a.port && again.value().secret == a.secret);
  return 0;
}
