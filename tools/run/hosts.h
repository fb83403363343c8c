// Which hosts a multi-host job runs on and which PEs each gets: `--hosts h1:2,h2:2` and `--hostfile F`
// (lines `host [slots=N]`), and the block placement of N PEs over them. Pure functions: no I/O but
// read_hostfile's one read, so that every rule is unit-tested (tests/unit/run/hosts_test.cc).
//
// Errors name the offending text, where it was (the hostfile's line number) and the limit.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::run {

inline constexpr int kMaxSlots = 4096;        // per host, and PEs per job (tessera-run -n's limit)
inline constexpr size_t kMaxHostName = 253;   // a DNS name's limit

struct HostSlots {
  std::string name;  // as given: it is what rsh is asked to reach, and the first host's name is the bootstrap's
  int slots = 1;
};

// The PEs of one host: ranks first .. first + count - 1.
struct HostPes {
  std::string name;
  int first = 0;
  int count = 0;
  std::string ranks() const;  // "PE 2" or "PEs 2-3", for messages
};

// A host name: letters, digits, '.', '-' and '_', 1..kMaxHostName characters (no user@, no IPv6: the name
// also goes into rsh's command and into TESSERA_BOOTSTRAP=tcp://NAME:PORT).
Status check_host_name(std::string_view name);

// "h1:2,h2,h3:4" (slots default 1). Every host once.
Result<std::vector<HostSlots>> parse_hosts(std::string_view text);
// A hostfile's text: one host a line, `host [slots=N]`; '#' starts a comment; blank lines are skipped.
// `path` names the file in errors ("F, line 3: ...").
Result<std::vector<HostSlots>> parse_hostfile(std::string_view text, const std::string& path);
Result<std::vector<HostSlots>> read_hostfile(const std::string& path);

// n PEs filling the hosts in order, each up to its slots (n <= 0: every slot). Hosts left without a PE are
// not in the result. Fails when n exceeds the slots, naming both.
Result<std::vector<HostPes>> place_block(const std::vector<HostSlots>& hosts, int n);

}  // namespace tessera::run
