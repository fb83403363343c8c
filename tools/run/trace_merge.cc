#include "trace_merge.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tessera::run {
namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  size_t b = 0;
  for (size_t i = 0; i <= line.size(); ++i)
    if (i == line.size() || line[i] == '\t') f.push_back(line.substr(b, i - b)), b = i + 1;
  return f;
}

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF), or 0 when the bytes there are not one.
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return b(k) >= lo && b(k) <= hi; };
  const unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const bool second = c == 0xE0 ? cont(1, 0xA0) : c == 0xED ? cont(1, 0x80, 0x9F) : cont(1);
    return second && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const bool second = c == 0xF0 ? cont(1, 0x90) : c == 0xF4 ? cont(1, 0x80, 0x8F) : cont(1);
    return second && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// A JSON string literal: quotes, backslashes and control characters escaped, and each byte that does not
// belong to well-formed UTF-8 written as U+FFFD, so that the merged file stays JSON whatever a name held
// (JSON text is UTF-8: the trace viewers and every parser refuse anything else).
std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = utf8_length(s, i);
    if (len == 0) o += "\\ufffd", ++i;
    else if (len > 1) o.append(s, i, len), i += len;
    else {
      if (c == '"' || c == '\\') o += '\\', o += static_cast<char>(c);
      else if (c < 0x20) o += fmt::format("\\u{:04x}", c);
      else o += static_cast<char>(c);
      ++i;
    }
  }
  return o + "\"";
}

// Nanoseconds as microseconds with three decimals.
std::string micros(uint64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

bool parse_u64(const std::string& s, uint64_t* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}

struct PeFile {
  std::string path;
  int pe = -1;
  pid_t pid = -1;
};

// Reads the header of a PE's file.
Status read_header(const std::string& path, PeFile* f) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return invalid_arg("{}: cannot read", path);
  auto h = split_tabs(line);
  uint64_t pe, pid;
  if (h.size() < 5 || h[0] != "tessera-trace" || h[1] != "1" || !parse_u64(h[2], &pe) || !parse_u64(h[3], &pid) ||
      pe >= (uint64_t{1} << 24) || pid > static_cast<uint64_t>(std::numeric_limits<pid_t>::max()))
    return invalid_arg("{}: not a Tessera trace file (first line {:?}; PE below 2^24, pid a process id)", path, line);
  f->path = path;
  f->pe = static_cast<int>(pe);
  f->pid = static_cast<pid_t>(pid);
  return Status::ok();
}

// Appends one PE's events to the merged stream. *first: no event written yet (no comma before this one).
Status write_pe(const PeFile& pf, std::FILE* out, bool* first, uint64_t* events) {
  std::ifstream in(pf.path);
  std::string line;
  std::getline(in, line);  // header, read already
  auto sep = [&] {
    std::fputs(*first ? "\n" : ",\n", out);
    *first = false;
  };
  sep();
  fmt::print(out, R"j({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"PE {} (pid {})"}}}})j", pf.pe, pf.pe,
             pf.pid);
  sep();
  fmt::print(out, R"j({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})j", pf.pe, pf.pe);
  for (size_t lineno = 2; std::getline(in, line); ++lineno) {
    auto f = split_tabs(line);
    uint64_t tid, ts, dur;
    if (f.size() == 3 && f[0] == "T" && parse_u64(f[1], &tid)) {
      sep();
      fmt::print(out, R"j({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})j", pf.pe, tid,
                 json_string(f[2]));
      continue;
    }
    if (f.size() != 12 || f[0] != "E" || !parse_u64(f[1], &tid) || (f[2] != "X" && f[2] != "i") ||
        !parse_u64(f[4], &ts) || !parse_u64(f[5], &dur))
      return invalid_arg("{}:{}: malformed record {:?}", pf.path, lineno, line);
    std::string args;
    if (f[7] != "-") args += fmt::format("\"detail\":{}", json_string(f[7]));
    for (int k : {8, 10}) {
      if (f[static_cast<size_t>(k)] == "-") continue;
      char* end = nullptr;
      const long long v = std::strtoll(f[static_cast<size_t>(k) + 1].c_str(), &end, 10);
      args += fmt::format("{}{}:{}", args.empty() ? "" : ",", json_string(f[static_cast<size_t>(k)]), v);
    }
    sep();
    if (f[2] == "X")
      fmt::print(out, R"j({{"ph":"X","cat":{},"name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})j",
                 json_string(f[3]), json_string(f[6]), pf.pe, tid, micros(ts), micros(dur), args);
    else
      fmt::print(out, R"j({{"ph":"i","s":"t","cat":{},"name":{},"pid":{},"tid":{},"ts":{},"args":{{{}}}}})j",
                 json_string(f[3]), json_string(f[6]), pf.pe, tid, micros(ts), args);
    ++*events;
  }
  return Status::ok();
}

}  // namespace

std::string job_trace_dir(const std::vector<std::string>& env) {
  std::string dir;
  bool given = false;
  for (const auto& kv : env)
    if (kv.rfind("TESSERA_TRACE=", 0) == 0) dir = kv.substr(14), given = true;
  if (!given)
    if (const char* v = std::getenv("TESSERA_TRACE")) dir = v;
  return dir;
}

Status merge_traces(const std::string& dir, const std::vector<pid_t>& pids, std::string* summary) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return invalid_arg("trace directory {}: {}", dir, std::strerror(errno));
  std::vector<PeFile> files;
  Status st = Status::ok();
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("pe", 0) != 0 || name.size() < 9 || name.substr(name.size() - 6) != ".trace") continue;
    PeFile f;
    if (st = read_header(dir + "/" + name, &f); !st.is_ok()) break;
    if (!pids.empty() && std::find(pids.begin(), pids.end(), f.pid) == pids.end()) continue;
    files.push_back(f);
  }
  ::closedir(d);
  TS_RETURN_IF_ERROR(st);
  if (files.empty()) return invalid_arg("trace directory {}: no pe*.trace file of this job", dir);
  std::sort(files.begin(), files.end(), [](const PeFile& a, const PeFile& b) { return a.pe < b.pe; });
  for (size_t i = 1; i < files.size(); ++i)
    if (files[i].pe == files[i - 1].pe)
      return invalid_arg("trace directory {}: two files of PE {} ({} and {}): traces of more than one job; merge "
                         "one job's files at a time",
                         dir, files[i].pe, files[i - 1].path, files[i].path);
  const std::string path = dir + "/trace.json";
  const std::string tmp = path + ".tmp";
  std::FILE* out = std::fopen(tmp.c_str(), "w");
  if (!out) return invalid_arg("{}: cannot write: {}", tmp, std::strerror(errno));
  std::fputs(R"j({"displayTimeUnit":"ns","traceEvents":[)j", out);
  bool first = true;
  uint64_t events = 0;
  for (const PeFile& f : files)
    if (st = write_pe(f, out, &first, &events); !st.is_ok()) break;
  std::fputs("\n]}\n", out);
  const bool write_failed = std::fclose(out) != 0;
  if (st.is_ok() && write_failed) st = invalid_arg("{}: write failed: {}", tmp, std::strerror(errno));
  if (!st.is_ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return invalid_arg("{}: cannot rename to {}: {}", tmp, path, std::strerror(errno));
  *summary = fmt::format("trace of {} PE(s), {} events: {}", files.size(), events, path);
  return Status::ok();
}

Status print_trace_summary(const std::string& file, std::FILE* out, size_t top) {
  std::ifstream in(file);
  if (!in) return invalid_arg("{}: cannot read: {}", file, std::strerror(errno));
  nlohmann::json j;
  try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      return invalid_arg("{}: not JSON: {}", file, e.what());
    }
    // The object form ({"traceEvents": [...]}) or the bare array, both of which Chrome's format allows.
    const nlohmann::json* evs =
        j.is_object() && j.contains("traceEvents") ? &j["traceEvents"] : j.is_array() ? &j : nullptr;
    if (!evs || !evs->is_array()) return invalid_arg("{}: no traceEvents array", file);
    struct Sink {
      uint64_t count = 0;
      double total = 0, max = 0;
      std::set<int64_t> pes;
    };
    std::map<std::pair<std::string, std::string>, Sink> sinks;  // (category, name)
    std::map<int64_t, std::pair<double, double>> span;          // pe -> (first start, last end), microseconds
    size_t index = 0;
    // Any JSON is read: an event whose fields have other types than Chrome's format gives (a string "ts", a
    // numeric "name") is an error naming it, not an exception out of the tool.
    try {
    for (const auto& e : *evs) {
      ++index;
      if (!e.is_object() || e.value("ph", "") != "X") continue;
      const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
      const int64_t pe = e.value("pid", int64_t{0});
      // Waits by phase and collectives by algorithm: the detail is part of what the time went to.
      const std::string cat = e.value("cat", ""), name = e.value("name", "");
      std::string key = name;
      if ((cat == "wait" || (cat == "coll" && name != "step")) && e.contains("args") && e["args"].contains("detail"))
        key += " (" + e["args"]["detail"].get<std::string>() + ")";
      Sink& s = sinks[{cat, key}];
      ++s.count;
      s.total += dur;
      s.max = std::max(s.max, dur);
      s.pes.insert(pe);
      auto [it, fresh] = span.try_emplace(pe, ts, ts + dur);
      if (!fresh) it->second = {std::min(it->second.first, ts), std::max(it->second.second, ts + dur)};
    }
  } catch (const nlohmann::json::exception& e) {
    return invalid_arg("{}: traceEvents[{}]: {}", file, index - 1, e.what());
  }
  double traced = 0;
  for (const auto& [pe, s] : span) traced += s.second - s.first;
  std::vector<std::pair<std::pair<std::string, std::string>, Sink>> rows(sinks.begin(), sinks.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
  fmt::print(out, "{}: {} PE(s), traced time {:.3f} ms (sum over PEs of last end - first start)\n", file, span.size(),
             traced / 1e3);
  fmt::print(out, "{:<8} {:<32} {:>4} {:>9} {:>12} {:>11} {:>11} {:>7}\n", "category", "name", "PEs", "count",
             "total(us)", "mean(us)", "max(us)", "%span");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& [key, s] = rows[i];
    fmt::print(out, "{:<8} {:<32} {:>4} {:>9} {:>12.1f} {:>11.2f} {:>11.1f} {:>6.1f}%\n", key.first, key.second,
               s.pes.size(), s.count, s.total, s.total / static_cast<double>(s.count), s.max,
               traced > 0 ? 100.0 * s.total / traced : 0.0);
  }
  if (rows.size() > top) fmt::print(out, "({} more)\n", rows.size() - top);
  return Status::ok();
}

}  // namespace tessera::run
