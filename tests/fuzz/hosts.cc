// tessera-run's host lists (tools/run/hosts.h): --hosts h1:2,h2 and the hostfile's lines, then the block
// placement of n PEs over them. Input: one byte picks the form, one byte gives n (0: every slot), the rest
// is the text. Properties: an accepted list has valid, distinct names and 1..kMaxSlots slots each; a
// placement gives each host 1..slots PEs, numbered on from 0 without a gap, n in all (every slot for 0).
#include <set>
#include <string>

#include "fuzz.h"
#include "hosts.h"

namespace run = tessera::run;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::Input in(data, size);
  const bool hostfile = in.byte() & 1;
  const int n = in.byte() * 17;  // 0 .. 4335: on both sides of kMaxSlots
  const std::string_view text = in.rest();
  auto hosts = hostfile ? run::parse_hostfile(text, "fuzz.hosts") : run::parse_hosts(text);
  if (!hosts.is_ok()) {
    FUZZ_CHECK(!hosts.status().message().empty());
    return 0;
  }
  std::set<std::string> seen;
  long total = 0;
  FUZZ_CHECK(!hosts.value().empty());
  for (const auto& h : hosts.value()) {
    FUZZ_CHECK(run::check_host_name(h.name).is_ok());
    FUZZ_CHECK(seen.insert(h.name).second);
    FUZZ_CHECK(h.slots >= 1 && h.slots <= run::kMaxSlots);
    total += h.slots;
  }
  auto placed = run::place_block(hosts.value(), n);
  const long want = n == 0 ? total : n;
  FUZZ_CHECK(placed.is_ok() == (n == 0 ? total <= run::kMaxSlots : n <= total));
  if (!placed.is_ok()) return 0;
  int next = 0;
  for (size_t i = 0; i < placed.value().size(); ++i) {
    const auto& p = placed.value()[i];
    FUZZ_CHECK(p.name == hosts.value()[i].name);
    FUZZ_CHECK(p.first == next && p.count >= 1 && p.count <= hosts.value()[i].slots);
    FUZZ_CHECK(!p.ranks().empty());
    next += p.count;
  }
  FUZZ_CHECK(next == want);
  return 0;
}
