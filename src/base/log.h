// Logging and fatal errors.
//
// Every line starts with "tessera: PE <n>: " once the PE knows its number. fatal() prints one line and
// ends the whole job: it runs the abort hook (the PGAS layer sets the job-abort word so every other PE's
// waits end promptly) and exits with status 1. Thread-safe: one write(2) per line.
#pragma once
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace tessera::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Set once the PE knows its rank (-1: not yet known).
void set_pe(int pe);
int pe();
Level level();
void set_level(Level l);

void write_line(Level l, std::string_view msg);
[[noreturn]] void fatal_message(std::string_view msg);

// Called by fatal() before exit; the PGAS layer installs one that raises the job-abort flag.
using AbortHook = void (*)(int exit_code);
void set_abort_hook(AbortHook hook);

template <typename... Args>
[[noreturn]] void fatal(fmt::format_string<Args...> f, Args&&... args) {
  fatal_message(fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kWarn) write_line(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kInfo) write_line(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kDebug) write_line(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tessera::log

// Internal invariant check: a failure is a bug in Tessera, not in the caller's input.
#define TS_CHECK(cond)                                                                           \
  do {                                                                                           \
    if (!(cond)) ::tessera::log::fatal("internal check failed: {} ({}:{})", #cond, __FILE__, __LINE__); \
  } while (0)
