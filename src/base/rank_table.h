// The rank table (TESSERA_RANK_TABLE=FILE), like HCCL's: which host each PE runs on, the NICs of each host,
// and optionally the link between hosts, for jobs whose hosts are known ahead (a cluster's scheduler writes
// it) or tests that want to pin them:
//   {"version": 1,
//    "hosts": [{"name": "h1", "nics": ["eth0"], "pes": [0, 1]},
//              {"name": "h2", "nics": ["eth0"], "pes": [2, 3]}],
//    "link": {"latency_us": 20, "gbps": 1.8, "oneway_gbps": 3.0, "host_gbps": 2.4, "burst_gbps": 4.0,
//             "wake_us": 10}}
// A PE listed under a host takes that name as its host identity (pgas/peers.h), so PEs share memory only
// with PEs listed under the same host; a host's NICs become UCX's devices (UCX_NET_DEVICES, unless set);
// the link prices the two-level collectives (coll/select/link.h). Every PE of the job must be listed once.
// A file that cannot be read or parsed ends the job with the file, the place and what was expected.
#pragma once
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera {

struct RankTable {
  struct Host {
    std::string name;
    std::vector<std::string> nics;
    std::vector<int> pes;
  };
  std::vector<Host> hosts;
  double link_latency_us = 0, link_gbps = 0, link_oneway_gbps = 0, link_host_gbps = 0, link_burst_gbps = 0;  // 0: not given
  double link_wake_us = 0;  // 0: not given (no wake-up priced)
  std::string path;

  // The host that lists `pe`, or null.
  const Host* host_of(int pe) const;
};

// The table of TESSERA_RANK_TABLE, loaded once; null when the variable is not set.
const RankTable* rank_table();
// Parses a table (rank_table() and the tests). Any text is answered with a table or an error naming `path`,
// the place and what was expected; it never ends the process (rank_table() does that with the error).
Result<RankTable> parse_rank_table(const std::string& text, const std::string& path);

}  // namespace tessera
