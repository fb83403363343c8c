#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace tessera::log {
namespace {
std::atomic<int> g_pe{-1};
std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
std::atomic<AbortHook> g_abort_hook{nullptr};
}  // namespace

void set_pe(int p) { g_pe.store(p, std::memory_order_relaxed); }
int pe() { return g_pe.load(std::memory_order_relaxed); }
Level level() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
void set_level(Level l) { g_level.store(static_cast<int>(l), std::memory_order_relaxed); }
void set_abort_hook(AbortHook hook) { g_abort_hook.store(hook); }

void write_line(Level l, std::string_view msg) {
  const char* tag = l == Level::kWarn ? "warning: " : "";
  std::string line = pe() >= 0 ? fmt::format("tessera: PE {}: {}{}\n", pe(), tag, msg)
                               : fmt::format("tessera: {}{}\n", tag, msg);
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

void fatal_message(std::string_view msg) {
  // What the program printed before the error must not be lost with the process (stdout to a file or a
  // pipe is fully buffered). Unlocked: a thread that holds the stream's lock must not stall the exit.
  ::fflush_unlocked(stdout);
  ::fflush_unlocked(stderr);
  write_line(Level::kError, msg);
  if (AbortHook hook = g_abort_hook.load()) hook(1);
  std::_Exit(1);
}

}  // namespace tessera::log
