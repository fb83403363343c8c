// Environment configuration: every variable is declared once, where it is used, with its type, default and
// help text. `tessera-info --env` and docs/environment.md are produced from the same registry.
//
//   static const config::Var<double> kTimeout{"TESSERA_TIMEOUT", 300.0, "Seconds a blocking wait may ..."};
//   double t = kTimeout.get();   // parsed once; a malformed value is a fatal error naming value and limit
//
// Names may have aliases (SHMEM_SYMMETRIC_SIZE and TESSERA_SYMMETRIC_SIZE). At init, check_unknown() ends
// the job if the environment holds a TESSERA_* name that nothing declared (usually a typo), and PE 0 warns
// of each such SHMEM_* name (unknown_shmem_variables()); both name the nearest declared name.
// Thread-safe: values are parsed under a once-flag.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tessera::config {

enum class Type { kBool, kInt, kSize, kDouble, kString };

struct VarInfo {
  std::string name;
  std::vector<std::string> aliases;
  Type type;
  std::string default_text;
  std::string help;
  std::function<std::string()> current;  // value in force, as text
};

// All declared variables, in declaration order.
std::vector<const VarInfo*> all();
void declare(VarInfo* info);

// Raw lookup: first of name/aliases set in the environment (the alias that was set is returned too).
std::optional<std::pair<std::string, std::string>> lookup(const VarInfo& info);

// Parsers: each names the variable, the value and what was expected.
Result<bool> parse_bool(std::string_view var, std::string_view text);
Result<int64_t> parse_int(std::string_view var, std::string_view text);
Result<uint64_t> parse_size(std::string_view var, std::string_view text);  // 64K, 2M, 1G, 1T, plain bytes
Result<double> parse_double(std::string_view var, std::string_view text);
std::string format_size(uint64_t bytes);

// An error naming the first TESSERA_* variable set that no Var declared (TESSERA_JOB_*, tessera-run's own, aside)
// and the nearest declared name when it looks like a typo of one; the job ends on it. Counts in the message
// are of all(), the rows of `tessera-info --env`.
Status check_unknown();

// A warning line for each SHMEM_* variable set that no Var declared, with the nearest declared name when it
// looks like a typo of one. The OpenSHMEM specification defines few (SHMEM_VERSION, SHMEM_INFO,
// SHMEM_SYMMETRIC_SIZE, SHMEM_DEBUG), so another is a typo or another library's: a warning, not an error,
// since one environment may serve jobs of other OpenSHMEM libraries.
std::vector<std::string> unknown_shmem_variables();

template <typename T> struct TypeOf;
template <> struct TypeOf<bool> { static constexpr Type value = Type::kBool; };
template <> struct TypeOf<int64_t> { static constexpr Type value = Type::kInt; };
template <> struct TypeOf<uint64_t> { static constexpr Type value = Type::kSize; };
template <> struct TypeOf<double> { static constexpr Type value = Type::kDouble; };
template <> struct TypeOf<std::string> { static constexpr Type value = Type::kString; };

std::string to_text(bool v);
std::string to_text(int64_t v);
std::string to_text(uint64_t v);
std::string to_text(double v);
std::string to_text(const std::string& v);
Result<bool> parse(std::string_view var, std::string_view text, bool*);
Result<int64_t> parse(std::string_view var, std::string_view text, int64_t*);
Result<uint64_t> parse(std::string_view var, std::string_view text, uint64_t*);
Result<double> parse(std::string_view var, std::string_view text, double*);
Result<std::string> parse(std::string_view var, std::string_view text, std::string*);

[[noreturn]] void fatal_config(const Status& st);

// `show`, when given, is how the value in force is printed (SHMEM_INFO, tessera-info --env) instead of
// to_text: a variable that carries a secret prints it masked, since those listings end up in job logs.
template <typename T>
class Var {
 public:
  Var(std::string name, T def, std::string help, std::vector<std::string> aliases = {},
      std::string (*show)(const T&) = nullptr)
      : default_(def) {
    info_.name = std::move(name);
    info_.aliases = std::move(aliases);
    info_.type = TypeOf<T>::value;
    info_.default_text = show ? show(def) : to_text(def);
    info_.help = std::move(help);
    info_.current = [this, show] { return show ? show(get()) : to_text(get()); };
    declare(&info_);
  }
  Var(const Var&) = delete;
  Var& operator=(const Var&) = delete;

  // The value in force: from the environment (parsed once) or the default. Malformed values end the job.
  // The flag first: libstdc++'s call_once writes two thread-locals on every call, which costs a hot path
  // (a collective reads two variables per call) more than the rest of its bookkeeping.
  const T& get() const {
    if (parsed_.load(std::memory_order_acquire)) return value_;
    std::call_once(once_, [this] {
      value_ = default_;
      if (auto kv = lookup(info_)) {
        auto r = parse(kv->first, kv->second, static_cast<T*>(nullptr));
        if (!r.is_ok()) fatal_config(r.status());
        value_ = std::move(r).value();
        set_ = true;
      }
      parsed_.store(true, std::memory_order_release);
    });
    return value_;
  }
  bool is_set() const { get(); return set_; }
  const std::string& name() const { return info_.name; }

 private:
  VarInfo info_;
  T default_;
  mutable T value_{};
  mutable bool set_ = false;
  mutable std::once_flag once_;
  mutable std::atomic<bool> parsed_{false};
};

// For a variable that takes one of a few words: the index of v's value in `choices`. Any other value ends
// the job, naming the variable, the value and the choices ("TESSERA_X=y: expected auto, on or off").
size_t one_of(const Var<std::string>& v, std::initializer_list<std::string_view> choices);

// For a test hook that names a PE and a number ("PE:N"): {pe, n}, or {-1, 0} when v is empty. A malformed
// value, or n outside [lo, hi], ends the job naming the variable, the value and `form` (what N means).
std::pair<int, uint32_t> pe_and_number(const Var<std::string>& v, uint32_t lo, uint32_t hi, std::string_view form);

}  // namespace tessera::config
