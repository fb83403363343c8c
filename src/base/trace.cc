#include "base/trace.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "base/config.h"
#include "base/log.h"

namespace tessera::trace {
namespace {
const config::Var<std::string> kTrace{
    "TESSERA_TRACE", "",
    "Directory for a timeline trace: each PE writes pe<rank>.<pid>.trace there at finalize, and tessera-run "
    "merges them into trace.json (Chrome/Perfetto); empty: no tracing"};

// Events a thread keeps; later ones are dropped and counted (a fixed bound keeps recording free of
// allocation and a runaway loop from exhausting memory).
constexpr size_t kCapacity = size_t{1} << 18;
// Distinct interned texts; past this, intern() returns a shared placeholder.
constexpr size_t kMaxInterned = 8192;

struct Event {
  const char* name;
  const char* detail;
  const char* k0;
  const char* k1;
  uint64_t ts;
  uint64_t dur;
  int64_t a0;
  int64_t a1;
  Cat cat;
  char ph;
};

struct ThreadBuf {
  int tid = 0;
  std::string name;
  std::unique_ptr<Event[]> events{new Event[kCapacity]};
  std::atomic<size_t> count{0};  // published events (release after each write)
  uint64_t dropped = 0;
  uint64_t coll_mark = 0;  // coll_step(): the end of the previous step on this thread
};

struct State {
  std::mutex mu;
  std::vector<ThreadBuf*> bufs;  // never freed: threads may record until exit
  std::unordered_set<std::string> interned;
  std::string dir;
  int pe = -1;
  bool flushed = false;
};
State& state() {
  static State* s = new State();  // never destroyed: flush() runs from atexit, after static destructors may
  return *s;
}

thread_local ThreadBuf* tl_buf = nullptr;

ThreadBuf& buf() {
  if (tl_buf) [[likely]] return *tl_buf;
  auto* b = new ThreadBuf();
  b->tid = static_cast<int>(::syscall(SYS_gettid));
  b->name = b->tid == ::getpid() ? "main" : "thread " + std::to_string(b->tid);
  State& s = state();
  std::lock_guard lk(s.mu);
  s.bufs.push_back(b);
  tl_buf = b;
  return *b;
}

void push(const Event& e) {
  ThreadBuf& b = buf();
  const size_t n = b.count.load(std::memory_order_relaxed);
  if (n >= kCapacity) [[unlikely]] {
    ++b.dropped;
    return;
  }
  b.events[n] = e;
  b.count.store(n + 1, std::memory_order_release);
}

// Tabs and newlines would split a record: replaced by spaces.
std::string field(const char* s) {
  if (!s || !*s) return "-";
  std::string t(s);
  for (char& c : t)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return t;
}

Status make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    std::string p = path.substr(0, i);
    if (::mkdir(p.c_str(), 0777) != 0 && errno != EEXIST)
      return make_status(Code::kInternal, "TESSERA_TRACE={}: cannot create {}: {}", path, p, std::strerror(errno));
  }
  return Status::ok();
}
}  // namespace

const char* cat_name(Cat c) {
  static const char* const kNames[] = {"rma", "wait", "coll", "stream", "bucket", "kernel"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(Cat::kCount));
  return c < Cat::kCount ? kNames[static_cast<int>(c)] : "?";
}

const std::string& dir() { return kTrace.get(); }

void init(int pe) {
  const std::string& d = kTrace.get();
  if (d.empty()) return;
  State& s = state();
  {
    std::lock_guard lk(s.mu);
    s.dir = d;
    s.pe = pe;
    s.flushed = false;
  }
  if (Status st = make_dirs(d); !st.is_ok()) log::fatal("{}", st.message());
  static bool registered = false;
  if (!registered) registered = std::atexit(flush) == 0;
  g_on = true;
  name_thread("main");
}

void flush() {
  State& s = state();
  std::lock_guard lk(s.mu);
  if (!g_on || s.flushed || s.dir.empty()) return;
  s.flushed = true;
  const std::string path = fmt::format("{}/pe{}.{}.trace", s.dir, s.pe, ::getpid());
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    log::warn("TESSERA_TRACE: cannot write {}: {}", path, std::strerror(errno));
    return;
  }
  uint64_t dropped = 0;
  for (ThreadBuf* b : s.bufs) dropped += b->dropped;
  fmt::print(f, "tessera-trace\t1\t{}\t{}\t{}\n", s.pe, ::getpid(), dropped);
  for (ThreadBuf* b : s.bufs) fmt::print(f, "T\t{}\t{}\n", b->tid, field(b->name.c_str()));
  for (ThreadBuf* b : s.bufs) {
    const size_t n = b->count.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      const Event& e = b->events[i];
      fmt::print(f, "E\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", b->tid, e.ph, cat_name(e.cat), e.ts, e.dur,
                 field(e.name), field(e.detail), field(e.k0), e.a0, field(e.k1), e.a1);
    }
  }
  if (std::fclose(f) != 0) log::warn("TESSERA_TRACE: writing {} failed: {}", path, std::strerror(errno));
  if (dropped) log::warn("TESSERA_TRACE: {} events dropped (each thread keeps {})", dropped, kCapacity);
}

void name_thread(std::string_view name) { buf().name = std::string(name); }

const char* intern(std::string_view text) {
  State& s = state();
  std::lock_guard lk(s.mu);
  auto it = s.interned.find(std::string(text));
  if (it != s.interned.end()) return it->c_str();
  if (s.interned.size() >= kMaxInterned) return "(more names)";
  return s.interned.emplace(text).first->c_str();  // node-based: the pointer stays valid
}

void complete(Cat c, const char* name, uint64_t start, uint64_t end, const char* detail, Args a) {
  push({.name = name, .detail = detail, .k0 = a.k0, .k1 = a.k1, .ts = start, .dur = end > start ? end - start : 0,
        .a0 = a.a0, .a1 = a.a1, .cat = c, .ph = 'X'});
}

void instant(Cat c, const char* name, const char* detail, Args a) {
  push({.name = name, .detail = detail, .k0 = a.k0, .k1 = a.k1, .ts = now(), .dur = 0, .a0 = a.a0, .a1 = a.a1,
        .cat = c, .ph = 'i'});
}

void wait_done(uint64_t start, WaitPhase phase) {
  static const char* const kPhase[] = {"spin", "yield", "sleep"};
  complete(Cat::kWait, "wait", start, now(), kPhase[phase]);
}

uint64_t coll_begin() {
  const uint64_t t = now();
  buf().coll_mark = t;
  return t;
}

void coll_step(uint64_t t) {
  ThreadBuf& b = buf();
  if (b.coll_mark == 0) return;  // a step outside dispatch (no call span to nest in)
  const uint64_t end = now();
  complete(Cat::kColl, "step", b.coll_mark, end, nullptr, {.k0 = "step", .a0 = static_cast<int64_t>(t)});
  b.coll_mark = end;
}

void coll_end(uint64_t start, const char* kind, const char* algo, uint64_t bytes, uint64_t steps) {
  ThreadBuf& b = buf();
  const uint64_t end = now();
  complete(Cat::kColl, kind, start, end, algo,
           {.k0 = "bytes", .a0 = static_cast<int64_t>(bytes), .k1 = "steps", .a1 = static_cast<int64_t>(steps)});
  b.coll_mark = 0;
}

}  // namespace tessera::trace
