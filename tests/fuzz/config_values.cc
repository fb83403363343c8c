// The environment's value parsers (base/config.h): booleans, integers, sizes with their suffixes, numbers.
// Input: one byte picks the parser, the rest is the value's text. Properties: an error is a Status naming
// the variable; a value printed as the registry prints it (to_text) parses back to the same value; a size
// written in plain digits parses to exactly that integer; a size never exceeds 2^64-1.
#include <cmath>
#include <string>

#include "base/config.h"
#include "fuzz.h"

namespace config = tessera::config;

namespace {
constexpr std::string_view kVar = "TESSERA_FUZZ_VALUE";

// The error names the variable, as every config error must (the user has to know which one to fix).
template <typename T>
void check_error(const tessera::Result<T>& r) {
  if (!r.is_ok()) FUZZ_CHECK(r.status().message().find(kVar) != std::string::npos);
}

// "123" (up to 20 digits, no sign, no suffix): the exact integer, or nullopt above 2^64-1.
bool plain_digits(std::string_view t, unsigned __int128* out) {
  size_t b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
  if (b == std::string_view::npos) return false;
  t = t.substr(b, e - b + 1);
  if (t.empty() || t.size() > 20 || t.find_first_not_of("0123456789") != std::string_view::npos) return false;
  unsigned __int128 v = 0;
  for (char c : t) v = v * 10 + static_cast<unsigned>(c - '0');
  *out = v;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::Input in(data, size);
  const uint8_t which = in.byte();
  const std::string_view text = in.rest();
  switch (which % 4) {
    case 0: {
      auto r = config::parse_bool(kVar, text);
      check_error(r);
      if (r.is_ok()) FUZZ_CHECK(config::parse_bool(kVar, config::to_text(r.value())).value() == r.value());
      break;
    }
    case 1: {
      auto r = config::parse_int(kVar, text);
      check_error(r);
      if (r.is_ok()) {
        auto again = config::parse_int(kVar, config::to_text(r.value()));
        FUZZ_CHECK(again.is_ok() && again.value() == r.value());
      }
      break;
    }
    case 2: {
      auto r = config::parse_size(kVar, text);
      check_error(r);
      unsigned __int128 exact = 0;
      if (plain_digits(text, &exact)) {
        const bool fits = exact <= UINT64_MAX;
        FUZZ_CHECK(r.is_ok() == fits);
        if (fits) FUZZ_CHECK(r.value() == static_cast<uint64_t>(exact));
      }
      if (r.is_ok()) {
        // What tessera-info prints: exact when it has no fraction, and then it parses back to the value.
        const std::string shown = config::format_size(r.value());
        if (shown.find('.') == std::string::npos) {
          auto again = config::parse_size(kVar, shown);
          FUZZ_CHECK(again.is_ok() && again.value() == r.value());
        }
      }
      break;
    }
    case 3: {
      auto r = config::parse_double(kVar, text);
      check_error(r);
      if (r.is_ok()) {
        FUZZ_CHECK(std::isfinite(r.value()));
        auto again = config::parse_double(kVar, config::to_text(r.value()));
        FUZZ_CHECK(again.is_ok() && again.value() == r.value());
      }
      break;
    }
  }
  return 0;
}
