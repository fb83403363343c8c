#include "hosts.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace tessera::run {
namespace {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// slots: 1..kMaxSlots in decimal. `where` prefixes the error ("--hosts", "F, line 3").
Result<int> parse_slots(std::string_view text, const std::string& where, std::string_view host) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return invalid_arg("{}: host {}: slots {:?}: expected a number, 1 to {}", where, host, text, kMaxSlots);
  const int v = std::stoi(std::string(text));
  if (v < 1 || v > kMaxSlots)
    return invalid_arg("{}: host {}: {} slots: expected 1 to {}", where, host, v, kMaxSlots);
  return v;
}

Status add_host(std::vector<HostSlots>* hosts, std::set<std::string>* seen, HostSlots h, const std::string& where) {
  if (Status st = check_host_name(h.name); !st.is_ok()) return invalid_arg("{}: {}", where, st.message());
  // One agent per host: a host named twice would need its two entries merged, which hides a typo more
  // often than it helps.
  if (!seen->insert(h.name).second)
    return invalid_arg("{}: host {} is named twice (give it once, with all its slots: {}:N)", where, h.name, h.name);
  hosts->push_back(std::move(h));
  return Status::ok();
}

}  // namespace

std::string HostPes::ranks() const {
  return count == 1 ? fmt::format("PE {}", first) : fmt::format("PEs {}-{}", first, first + count - 1);
}

Status check_host_name(std::string_view name) {
  if (name.empty()) return invalid_arg("empty host name");
  if (name.size() > kMaxHostName)
    return invalid_arg("host name {:?} has {} characters (at most {})", name, name.size(), kMaxHostName);
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    if (!ok)
      return invalid_arg("host name {:?}: {:?} is not allowed (letters, digits, '.', '-' and '_')", name,
                         std::string(1, c));
  }
  return Status::ok();
}

Result<std::vector<HostSlots>> parse_hosts(std::string_view text) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  if (trim(text).empty()) return invalid_arg("--hosts: no host given (expected host[:slots],...)");
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string_view item = trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (item.empty())
      return invalid_arg("--hosts {:?}: an empty entry (expected host[:slots],...)", text);
    HostSlots h;
    const size_t colon = item.find(':');
    h.name = std::string(trim(item.substr(0, colon)));
    if (colon != std::string_view::npos) {
      TS_ASSIGN_OR_RETURN(h.slots, parse_slots(trim(item.substr(colon + 1)), "--hosts", h.name));
    }
    TS_RETURN_IF_ERROR(add_host(&hosts, &seen, std::move(h), "--hosts"));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return hosts;
}

Result<std::vector<HostSlots>> parse_hostfile(std::string_view text, const std::string& path) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::string where = fmt::format("{}, line {}", path, line_no);
    std::istringstream words{std::string(line)};
    HostSlots h;
    words >> h.name;
    bool have_slots = false;
    for (std::string w; words >> w;) {
      if (w.rfind("slots=", 0) != 0)
        return invalid_arg("{}: {:?}: expected 'host [slots=N]'", where, std::string(line));
      if (have_slots) return invalid_arg("{}: slots given twice for host {}", where, h.name);
      TS_ASSIGN_OR_RETURN(h.slots, parse_slots(std::string_view(w).substr(6), where, h.name));
      have_slots = true;
    }
    TS_RETURN_IF_ERROR(add_host(&hosts, &seen, std::move(h), where));
  }
  if (hosts.empty()) return invalid_arg("{}: no host in the file (expected lines 'host [slots=N]')", path);
  return hosts;
}

Result<std::vector<HostSlots>> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_arg("--hostfile {}: cannot open it: {}", path, std::strerror(errno));
  std::ostringstream all;
  all << in.rdbuf();
  return parse_hostfile(all.str(), path);
}

Result<std::vector<HostPes>> place_block(const std::vector<HostSlots>& hosts, int n) {
  long total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  if (n <= 0) {
    if (total > kMaxSlots)
      return invalid_arg("the hosts offer {} slots; a job has at most {} PEs (give -n N)", total, kMaxSlots);
    n = static_cast<int>(total);
  }
  if (n > total)
    return invalid_arg("-n {}: the hosts offer only {} slot{} ({} host{})", n, total, total == 1 ? "" : "s",
                       hosts.size(), hosts.size() == 1 ? "" : "s");
  std::vector<HostPes> out;
  int next = 0;
  for (const HostSlots& h : hosts) {
    if (next == n) break;
    const int count = std::min(h.slots, n - next);
    out.push_back({h.name, next, count});
    next += count;
  }
  return out;
}

}  // namespace tessera::run
