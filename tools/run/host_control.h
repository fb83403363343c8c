// Resilient mode under tessera-run --hosts (docs/resilience.md, "Across hosts"): the control segment of one
// host (pgas::JobControl), made and owned by that host's agent, which the host's PEs map instead of making
// their own (TESSERA_JOB_CONTROL). Its words are per host, so what resilient mode reads there crosses hosts
// through the agents and the launcher:
//  - a PE's failure: the launcher numbers it and sends kPeFailed to every agent, which marks it here as the
//    one-host launcher does (fail index, state, then the count) and rings every local PE's doorbell;
//  - a PE's records (sync::FailRecords: agreements, revocations) and its finalize count: the agent copies
//    each local PE's that changed into a kPublish, the launcher relays it to the other agents, and they
//    write it into their segment, then ring. An agent sends a dead PE's last records before its exit, and
//    the launcher relays in arrival order, so on every host the records of a PE land before its failure mark.
//
// Thread safety: the agent's thread only.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "pgas/runtime.h"

namespace tessera::run {

class HostControl {
 public:
  HostControl() = default;
  ~HostControl();
  HostControl(const HostControl&) = delete;
  HostControl& operator=(const HostControl&) = delete;

  // Makes the segment of host `host_index` for a resilient job of `n_pes` PEs.
  Status create(const std::string& job_id, uint32_t host_index, uint32_t n_pes);
  bool on() const { return ctl_ != nullptr; }
  const std::string& name() const { return name_; }

  // Marks `rank` failed, `index`-th in the launcher's order, and rings every local PE.
  void mark_failed(uint32_t rank, uint32_t index);
  // This host's PE `rank`: its records as a kPublish payload if they changed since the last one sent,
  // else empty.
  std::vector<char> changed(uint32_t rank);
  // Another host's kPublish: writes the records into this segment and rings every local PE. False when the
  // payload is malformed.
  bool apply(const std::vector<char>& payload);

 private:
  // A PE's records as plain values (what was last sent, or what a payload carries).
  struct Snapshot {
    uint64_t uid[sync::FailRecords::kAgree] = {}, epoch[sync::FailRecords::kAgree] = {};
    uint32_t failures[sync::FailRecords::kAgree] = {}, flag[sync::FailRecords::kAgree] = {};
    uint64_t revoke_uid[sync::FailRecords::kRevoke] = {}, revoke_by[sync::FailRecords::kRevoke] = {};
    uint32_t leaves = 0;
    bool operator==(const Snapshot&) const = default;
  };
  // False while a record is being written (read again later).
  bool read(uint32_t rank, Snapshot* out);
  void ring_all();

  pgas::JobControl* ctl_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  std::map<uint32_t, Snapshot> sent_;
};

}  // namespace tessera::run
