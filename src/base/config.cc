#include "base/config.h"

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "base/log.h"

extern char** environ;

namespace tessera::config {
namespace {
std::vector<VarInfo*>& registry() {
  static std::vector<VarInfo*> r;
  return r;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}
}  // namespace

void declare(VarInfo* info) {
  std::lock_guard lk(registry_mutex());
  registry().push_back(info);
}

std::vector<const VarInfo*> all() {
  std::lock_guard lk(registry_mutex());
  return {registry().begin(), registry().end()};
}

std::optional<std::pair<std::string, std::string>> lookup(const VarInfo& info) {
  if (const char* v = std::getenv(info.name.c_str())) return std::make_pair(info.name, std::string(v));
  for (const auto& a : info.aliases)
    if (const char* v = std::getenv(a.c_str())) return std::make_pair(a, std::string(v));
  return std::nullopt;
}

Result<bool> parse_bool(std::string_view var, std::string_view text) {
  std::string t = trim(text);
  for (auto& c : t) c = static_cast<char>(std::tolower(c));
  if (t == "1" || t == "y" || t == "yes" || t == "true" || t == "on") return true;
  if (t == "0" || t == "n" || t == "no" || t == "false" || t == "off" || t.empty()) return false;
  return invalid_arg("{}={:?}: expected a boolean (1/0, yes/no, true/false, on/off)", var, text);
}

Result<int64_t> parse_int(std::string_view var, std::string_view text) {
  std::string t = trim(text);
  if (t.empty()) return invalid_arg("{}={:?}: expected an integer", var, text);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 0);
  if (errno == ERANGE) return invalid_arg("{}={:?}: integer out of range (limit ±2^63)", var, text);
  if (*end != '\0') return invalid_arg("{}={:?}: expected an integer", var, text);
  return static_cast<int64_t>(v);
}

Result<uint64_t> parse_size(std::string_view var, std::string_view text) {
  std::string t = trim(text);
  if (t.empty() || !(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.'))
    return invalid_arg("{}={:?}: expected a size such as 512M, 2G or 1048576", var, text);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  const bool range_error = errno == ERANGE;
  const std::string number(t, 0, static_cast<size_t>(end - t.c_str()));
  std::string suffix = trim(end);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(c));
  if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back();  // KiB, MiB, GiB
  int shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K") shift = 10;
  else if (suffix == "M") shift = 20;
  else if (suffix == "G") shift = 30;
  else if (suffix == "T") shift = 40;
  else return invalid_arg("{}={:?}: unknown size suffix {:?} (use K, M, G or T)", var, text, suffix);
  // A whole number is read as an integer: a double holds every integer only up to 2^53, and a size is
  // often a byte count.
  if (!number.empty() && number.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    const unsigned long long n = std::strtoull(number.c_str(), nullptr, 10);
    if (errno == ERANGE || n > (UINT64_MAX >> shift))
      return invalid_arg("{}={:?}: size out of range (limit 2^64-1 bytes)", var, text);
    return static_cast<uint64_t>(n) << shift;
  }
  double bytes = std::ldexp(v, shift);
  if (range_error || !std::isfinite(bytes) || bytes < 0 || bytes >= 18446744073709551615.0)
    return invalid_arg("{}={:?}: size out of range (limit 2^64-1 bytes)", var, text);
  return static_cast<uint64_t>(bytes);
}

Result<double> parse_double(std::string_view var, std::string_view text) {
  std::string t = trim(text);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    return invalid_arg("{}={:?}: expected a number", var, text);
  return v;
}

std::string format_size(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  // Whole units in integers: a double would round sizes above 2^53 and print a whole unit that is not.
  uint64_t whole = b;
  while (whole >= 1024 && u < 4 && whole % 1024 == 0) { whole /= 1024; ++u; }
  if (u == 0 && b >= 1024) {
    double v = static_cast<double>(b);
    while (v >= 1024 && u < 4) { v /= 1024; ++u; }
    return fmt::format("{:.1f} {}", v, units[u]);
  }
  return fmt::format("{} {}", whole, units[u]);
}

std::string to_text(bool v) { return v ? "1" : "0"; }
std::string to_text(int64_t v) { return std::to_string(v); }
std::string to_text(uint64_t v) { return format_size(v); }
std::string to_text(double v) { return fmt::format("{}", v); }
std::string to_text(const std::string& v) { return v; }
Result<bool> parse(std::string_view var, std::string_view t, bool*) { return parse_bool(var, t); }
Result<int64_t> parse(std::string_view var, std::string_view t, int64_t*) { return parse_int(var, t); }
Result<uint64_t> parse(std::string_view var, std::string_view t, uint64_t*) { return parse_size(var, t); }
Result<double> parse(std::string_view var, std::string_view t, double*) { return parse_double(var, t); }
Result<std::string> parse(std::string_view, std::string_view t, std::string*) { return std::string(t); }

void fatal_config(const Status& st) { log::fatal("environment: {}", st.message()); }

std::pair<int, uint32_t> pe_and_number(const Var<std::string>& v, uint32_t lo, uint32_t hi, std::string_view form) {
  const std::string& s = v.get();
  if (s.empty()) return {-1, 0};
  int pe = -1;
  unsigned n = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d:%u%c", &pe, &n, &tail) != 2 || pe < 0 || n < lo || n > hi)
    fatal_config(invalid_arg("{}={}: must be PE:{}, a PE number and {}..{}", v.name(), s, form, lo, hi));
  return {pe, n};
}

size_t one_of(const Var<std::string>& v, std::initializer_list<std::string_view> choices) {
  const std::string& s = v.get();
  std::string expected;
  size_t i = 0;
  for (std::string_view c : choices) {
    if (s == c) return i;
    expected += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    expected += c;
    ++i;
  }
  fatal_config(invalid_arg("{}={}: expected {}", v.name(), s, expected));
}

namespace {
// The edits a typo makes between two names: insertions, deletions, substitutions and swaps of neighbours
// (optimal string alignment distance).
size_t typo_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// For an unknown name's message: "; did you mean NAME?" with the declared name or alias nearest to it, when
// few enough edits separate them to be a typo (a longer name allows more), else nothing.
std::string did_you_mean(std::string_view name) {
  const size_t limit = 1 + name.size() / 8;
  std::string best;
  size_t best_d = limit + 1;
  for (const VarInfo* v : all()) {
    std::vector<std::string_view> names{v->name};
    names.insert(names.end(), v->aliases.begin(), v->aliases.end());
    for (std::string_view n : names)
      if (const size_t d = typo_distance(name, n); d < best_d) best_d = d, best = n;
  }
  return best.empty() ? "" : fmt::format("; did you mean {}?", best);
}

// The environment's names that begin with `prefix` and that no Var declared, in the environment's order.
std::vector<std::string> undeclared(std::string_view prefix) {
  std::set<std::string, std::less<>> known;
  for (const VarInfo* v : all()) {
    known.insert(v->name);
    known.insert(v->aliases.begin(), v->aliases.end());
  }
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind(prefix, 0) != 0) continue;
    std::string_view name = kv.substr(0, kv.find('='));
    if (!known.count(name)) names.emplace_back(name);
  }
  return names;
}
}  // namespace

Status check_unknown() {
  for (const std::string& name : undeclared("TESSERA_")) {
    if (name.rfind("TESSERA_JOB_", 0) == 0) continue;  // set by tessera-run for the bootstrap
    return invalid_arg("environment: unknown variable {}{} (`tessera-info --env` lists the {} known ones)", name,
                       did_you_mean(name), all().size());
  }
  return Status::ok();
}

std::vector<std::string> unknown_shmem_variables() {
  std::vector<std::string> lines;
  for (const std::string& name : undeclared("SHMEM_"))
    lines.push_back(fmt::format("environment: unknown variable {} is ignored{} (`tessera-info --env` lists the "
                                "{} known ones)", name, did_you_mean(name), all().size()));
  return lines;
}

}  // namespace tessera::config
