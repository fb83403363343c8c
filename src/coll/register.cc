// Registered buffers (register.h).
#include "coll/register.h"

#include <unistd.h>

#include <algorithm>
#include <array>

#include "base/log.h"
#include "coll/dispatch.h"
#include "coll/handle.h"
#include "transport/shm/remap.h"

namespace tessera::coll {

inline constexpr uint64_t kRegistrationMagic = 0x4e6c57e4'11c0ffeeull;

struct Registration {
  uint64_t magic = kRegistrationMagic;
  char* p = nullptr;  // the buffer as the caller gave it
  size_t bytes = 0;
  int refs = 1;
  transport::shm::SharedRange range;  // its pages, shared in place (none across hosts)
  uint64_t word = 0;                  // its region's first word; 0: no region (a communicator across hosts)
  std::vector<char*> peer_base;       // per member: the mapping of its range made here (null for me)
  std::vector<size_t> peer_bytes;
};

uint64_t SymMap::region_word(const char* p, size_t bytes) const {
  for (const Region& r : regions) {
    const size_t off = static_cast<size_t>(p - r.mine);
    if (off < r.mine_len && bytes <= r.mine_len - off) return r.word + off;
  }
  return 0;
}

char* SymMap::region_at(int m, uint64_t w) const {
  for (const Region& r : regions) {
    if (w < r.word || w - r.word >= r.span) continue;
    const size_t off = static_cast<size_t>(w - r.word), i = static_cast<size_t>(m);
    return r.at[i] && off < r.len[i] ? r.at[i] + off : nullptr;
  }
  return nullptr;
}

namespace {

// What each member says of its registration in the one exchange.
enum Word : size_t { kOk, kFd, kOffset, kRange, kBytes, kNext, kWords };

// A released registration is kept (its few bytes, as other handles are: handle.h), so that a late
// deregistration of its handle is refused rather than taken for a new registration at the same address.
void keep_dead(Registration* r) {
  r->magic = 0;
  r->peer_base.clear();
  r->peer_bytes.clear();
  keep_dead_handle(r);
}

Registration* find(const Communicator& c, const void* handle) {
  for (Registration* r : c.registrations)
    if (r == handle && r->magic == kRegistrationMagic) return r;
  return nullptr;
}

// This member's own request: the same buffer again (its registration), a new one (null), or an error.
Result<Registration*> check_mine(const char* routine, const Communicator& c, void* p, size_t bytes) {
  if (!p || bytes == 0) return invalid_arg("{}: {} bytes at {} is not a buffer to register", routine, bytes, p);
  const char* lo = static_cast<const char*>(p);
  if (reinterpret_cast<uintptr_t>(lo) + bytes < reinterpret_cast<uintptr_t>(lo))
    return invalid_arg("{}: {} bytes at {} wrap around the address space", routine, bytes, p);
  const uint64_t w = c.sym.word(p, bytes);
  if (w && w < c.sym.first_region_word())
    return invalid_arg("{}: {} bytes at {} lie in the symmetric heap or the program's globals, which every member "
                       "reaches already", routine, bytes, p);
  const long page = sysconf(_SC_PAGESIZE);
  for (Registration* r : c.registrations) {
    if (r->p == p && r->bytes == bytes) return r;
    // Whole pages are shared, so two buffers on one page overlap as far as registration goes.
    const uintptr_t a0 = reinterpret_cast<uintptr_t>(r->p) & ~static_cast<uintptr_t>(page - 1);
    const uintptr_t a1 = reinterpret_cast<uintptr_t>(r->p) + r->bytes;
    const uintptr_t b0 = reinterpret_cast<uintptr_t>(lo) & ~static_cast<uintptr_t>(page - 1);
    const uintptr_t b1 = reinterpret_cast<uintptr_t>(lo) + bytes;
    if (a0 < b1 && b0 < a1)
      return invalid_arg("{}: {} bytes at {} overlap the registered buffer of {} bytes at {} (in whole pages of {} "
                         "bytes): deregister it first, or register the same buffer again", routine, bytes, p,
                         r->bytes, static_cast<void*>(r->p), page);
  }
  return nullptr;
}

void drop_mappings(Registration& r) {
  for (size_t m = 0; m < r.peer_base.size(); ++m) transport::shm::unmap_peer_range(r.peer_base[m], r.peer_bytes[m]);
  r.peer_base.clear();
  r.peer_bytes.clear();
}

// The peers' mappings unmapped, the pages private again, the handle kept dead.
Status tear_down(Registration* r) {
  drop_mappings(*r);
  Status st = r->range.fd >= 0 ? transport::shm::unshare(r->range) : Status::ok();
  keep_dead(r);
  return st;
}

Status release(const char* routine, Communicator& c, Registration* r) {
  c.sym.regions.erase(std::remove_if(c.sym.regions.begin(), c.sym.regions.end(),
                                     [&](const SymMap::Region& g) { return r->word && g.word == r->word; }),
                      c.sym.regions.end());
  c.registrations.erase(std::find(c.registrations.begin(), c.registrations.end(), r));
  Status st = tear_down(r);
  return st.is_ok() ? st : make_status(st.code(), "{}: {}", routine, st.message());
}

}  // namespace

Result<Registration*> register_buffer(const char* routine, Communicator& c, void* p, size_t bytes,
                                      const Status& refused) {
  Result<Registration*> again = refused.is_ok() ? check_mine(routine, c, p, bytes) : Result<Registration*>(refused);
  Status mine = again.status();
  Registration* reg = nullptr;
  // Only whole pages are shared in place: sharing copies and remaps the pages, and another thread's write to
  // another object on a page the buffer only partly fills (the heap's own bookkeeping, say) would be lost.
  const long page = sysconf(_SC_PAGESIZE);
  const bool whole_pages = reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(page) == 0 &&
                           bytes % static_cast<size_t>(page) == 0;
  const bool share = !c.hier && c.size > 1 && whole_pages;
  // A new registration shares its pages before the exchange, so the peers can map them right after it.
  if (mine.is_ok() && !again.value()) {
    reg = new Registration();
    reg->p = static_cast<char*>(p);
    reg->bytes = bytes;
    if (share) {
      Result<transport::shm::SharedRange> sr = transport::shm::share_in_place(p, bytes);
      if (sr.is_ok()) reg->range = sr.value();
      else mine = make_status(sr.status().code(), "{}: {} bytes at {}: {}", routine, bytes, p, sr.status().message());
    }
  }
  const uint64_t base = c.next_region_word ? c.next_region_word : c.sym.first_region_word();
  std::array<uint64_t, kWords> d{};
  d[kOk] = mine.is_ok() ? (again.value() ? 2 : 1) : 0;
  d[kFd] = static_cast<uint64_t>(reg ? reg->range.fd : -1);
  d[kOffset] = reg && reg->range.lo ? static_cast<uint64_t>(static_cast<char*>(p) - reg->range.lo) : 0;
  d[kRange] = reg ? reg->range.bytes : 0;
  d[kBytes] = bytes;
  d[kNext] = base;
  std::vector<uint64_t> all(static_cast<size_t>(c.size) * kWords);
  Status ex = dispatch(c, Kind::kAllgather, Args{.send = d.data(), .recv = all.data(), .count = kWords, .dtype = DType::kUint64});
  auto at = [&](int m, Word w) { return all[static_cast<size_t>(m) * kWords + w]; };
  auto undo = [&](Status st) -> Result<Registration*> {
    if (reg) (void)tear_down(reg);
    return st;
  };
  if (!ex.is_ok()) return undo(ex);
  if (!mine.is_ok()) return undo(mine);
  for (int m = 0; m < c.size; ++m) {
    if (at(m, kOk) == 0)
      return undo(invalid_arg("{}: rank {} (PE {}) refused its buffer, so no member registers", routine, m,
                              c.world[static_cast<size_t>(m)]));
    if (at(m, kOk) != at(0, kOk))
      return undo(invalid_arg("{}: rank {} (PE {}) registers {} buffer where rank 0 (PE {}) registers {}", routine, m,
                              c.world[static_cast<size_t>(m)], at(m, kOk) == 2 ? "an already registered" : "a new",
                              c.world[0], at(0, kOk) == 2 ? "an already registered one" : "a new one"));
    if (at(m, kNext) != at(0, kNext))
      return undo(invalid_arg("{}: rank {} (PE {}) has registered other buffers than rank 0 (PE {}): registration "
                              "is collective, in the same order on every member", routine, m,
                              c.world[static_cast<size_t>(m)], c.world[0]));
  }
  if (again.value()) {  // every member registers its buffer again
    ++again.value()->refs;
    return again.value();
  }
  c.registrations.push_back(reg);
  // In place only when every member's buffer was shared (the same verdict everywhere): otherwise the
  // registration is kept without a region, and calls on it take their usual paths.
  bool all_shared = !c.hier && c.size > 1;
  for (int m = 0; m < c.size; ++m) all_shared = all_shared && at(m, kRange) != 0;
  if (!all_shared) {
    if (reg->range.fd >= 0) {
      Status st = transport::shm::unshare(reg->range);
      reg->range = {};
      if (!st.is_ok()) {
        c.registrations.pop_back();
        keep_dead(reg);
        return make_status(st.code(), "{}: {}", routine, st.message());
      }
    }
    return reg;
  }
  // Map every other member's range; the verdict on the mappings is the same everywhere again.
  reg->peer_base.assign(static_cast<size_t>(c.size), nullptr);
  reg->peer_bytes.assign(static_cast<size_t>(c.size), 0);
  Status mapped = Status::ok();
  for (int m = 0; m < c.size && mapped.is_ok(); ++m) {
    if (m == c.rank) continue;
    Result<char*> q = transport::shm::map_peer_range(c.pids[static_cast<size_t>(m)], static_cast<int>(at(m, kFd)),
                                                      at(m, kRange));
    if (q.is_ok()) {
      reg->peer_base[static_cast<size_t>(m)] = q.value();
      reg->peer_bytes[static_cast<size_t>(m)] = at(m, kRange);
    } else {
      mapped = make_status(q.status().code(), "{}: rank {} (PE {}) cannot map the registered buffer of rank {} (PE {}): {}",
                           routine, c.rank, c.world[static_cast<size_t>(c.rank)], m, c.world[static_cast<size_t>(m)],
                           q.status().message());
    }
  }
  uint64_t ok = mapped.is_ok() ? 1 : 0, all_ok = 0;
  Status agree = dispatch(c, Kind::kAllreduce, Args{.send = &ok, .recv = &all_ok, .count = 1, .dtype = DType::kUint64,
                                                     .op = Op::kMin});
  if (!agree.is_ok() || !all_ok) {
    c.registrations.pop_back();
    if (!agree.is_ok()) return undo(agree);
    return undo(mapped.is_ok() ? invalid_arg("{}: another member could not map a registered buffer, so no member "
                                             "registers (its error names the member)", routine)
                               : mapped);
  }
  SymMap::Region region;
  region.word = base;
  region.mine = static_cast<char*>(p);
  region.mine_len = bytes;
  for (int m = 0; m < c.size; ++m) {
    region.span = std::max<uint64_t>(region.span, at(m, kBytes));
    region.at.push_back(m == c.rank ? static_cast<char*>(p)
                                    : reg->peer_base[static_cast<size_t>(m)] + at(m, kOffset));
    region.len.push_back(static_cast<size_t>(at(m, kBytes)));
  }
  reg->word = base;
  c.next_region_word = base + region.span;
  c.sym.regions.push_back(std::move(region));
  return reg;
}

Status deregister_buffer(const char* routine, Communicator& c, void* handle) {
  Registration* r = find(c, handle);
  if (!r) return invalid_arg("{}: {} is not a live registration of {} (never registered there, or deregistered)", routine,
                             handle, c.name);
  if (--r->refs > 0) return Status::ok();
  return release(routine, c, r);
}

void deregister_all(Communicator& c) {
  while (!c.registrations.empty()) {
    Status st = release("tesseraCommDestroy", c, c.registrations.back());
    if (!st.is_ok()) log::warn("{}", st.message());
  }
}

std::pair<uint64_t, uint64_t> symmetric_words(const Communicator& c, Kind kind, const Args& a) {
  const size_t b = a.count * dtype_size(a.dtype), n = static_cast<size_t>(c.size);
  switch (kind) {
    case Kind::kAllreduce:
    case Kind::kBroadcast: return {c.sym.word(a.send, b), c.sym.word(a.recv, b)};
    case Kind::kAllgather: return {c.sym.word(a.send, b), c.sym.word(a.recv, n * b)};
    case Kind::kAlltoall: return {c.sym.word(a.send, n * b), c.sym.word(a.recv, n * b)};
    default: return {0, 0};
  }
}

bool in_registered(const Communicator& c, Kind kind, const Args& a) {
  if (c.hier || c.sym.regions.empty()) return false;
  const auto [s, r] = symmetric_words(c, kind, a);
  return s >= c.sym.first_region_word() && r >= c.sym.first_region_word();
}

}  // namespace tessera::coll
