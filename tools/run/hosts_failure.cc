#include "hosts_failure.h"

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent_wire.h"
#include "hosts_job.h"

namespace tessera::run {

const Failure& choose_cause(const std::vector<Failure>& failures) {
  const Failure* best = &failures.front();
  for (const Failure& f : failures)
    if (f.kind < best->kind) best = &f;  // strictly: the earliest of a kind stays
  return *best;
}

std::vector<char> Continuing::fail(int rank, const std::string& host, const std::string& why, int left) {
  const uint32_t index = static_cast<uint32_t>(failed_.size());
  failed_.push_back(rank);
  std::fprintf(stderr, "tessera-run: PE %d on host %s %s; the job continues on %d PE%s (--on-failure continue)\n",
               rank, host.c_str(), why.c_str(), left, left == 1 ? "" : "s");
  return Writer().u32(static_cast<uint32_t>(rank)).u32(index).bytes();
}

void Continuing::summary() const {
  if (failed_.empty()) return;
  std::fprintf(stderr, "tessera-run: the job went on without PE%s %s, and its other PEs ended normally\n",
               failed_.size() > 1 ? "s" : "", fmt::format("{}", fmt::join(failed_, ", ")).c_str());
}

}  // namespace tessera::run
