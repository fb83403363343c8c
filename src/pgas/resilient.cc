// Resilient mode in the runtime (resilient.h): the failure note, the finalize barrier, and growing back.
#include "pgas/resilient.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/rank_table.h"
#include "pgas/data_segment.h"
#include "pgas/layout.h"
#include "pgas/order.h"
#include "pgas/runtime.h"
#include "transport/shm/segment.h"

namespace tessera::pgas {
namespace {
const config::Var<uint64_t> kIncarnation{
    "TESSERA_INCARNATION", 0,
    "Set by tessera-run --restarts: 0 for a PE started with the job, k for the k-th process it started in "
    "place of a failed PE (docs/resilience.md, \"Growing back\")"};

const config::Var<int64_t> kControlFd{
    "TESSERA_JOB_CONTROL_FD", -1,
    "Set by tessera-run for a replacement PE: the descriptor it inherits the job's control segment by (the "
    "name is gone by then)"};

std::atomic<bool> g_joining{false};
int g_heap_fd = -1, g_data_fd = -1;

Status refuse(const std::string& why) {
  return make_status(Code::kInvalidArgument, "TESSERA_INCARNATION={}: this PE replaces a failed one, but {}",
                     kIncarnation.get(), why);
}
}  // namespace

// sync::WaitContext::failure_note: in resilient mode, the PEs marked failed so far, in the order they failed.
std::string failure_note() {
  const Runtime& r = rt();
  JobControl* jc = r.control;
  if (!jc || !jc->resilient.load(std::memory_order_relaxed)) return {};
  const uint32_t k = jc->failures.load(std::memory_order_acquire);
  if (k == 0) return {};
  std::vector<int> failed(k, -1);
  for (int pe = 0; pe < r.n_pes; ++pe) {
    if (!jc->failed(pe)) continue;
    const uint32_t i = jc->fail_index(pe)->load(std::memory_order_relaxed);
    if (i < k) failed[i] = pe;
  }
  std::string pes;
  for (int pe : failed)
    if (pe >= 0) pes += fmt::format("{}{}", pes.empty() ? "" : ", ", pe);
  return fmt::format(" (resilient mode: PE{} {} failed earlier, and a write or call it was to make never comes)",
                     k == 1 ? "" : "s", pes);
}

// Resilient mode's finalize barrier: as the world barrier, but a PE the launcher marked failed is not
// waited for (docs/resilience.md). Over the control segment, which every PE maps.
void leave_resilient(Runtime& r) {
  quiet();
  JobControl* jc = r.control;
  const uint32_t v = jc->leaves(r.my_pe)->load(std::memory_order_relaxed) + 1;
  jc->leaves(r.my_pe)->store(v, std::memory_order_release);
  sync::notify_all();
  for (int pe = 0; pe < r.n_pes; ++pe) {
    if (pe == r.my_pe) continue;
    sync::wait_until(
        [&] {
          return jc->leaves(pe)->load(std::memory_order_acquire) >= v || jc->failed(pe);
        },
        [&] { return fmt::format("shmem_finalize (resilient mode): PE {} to finalize or fail", pe); });
  }
}

uint32_t incarnation() { return static_cast<uint32_t>(kIncarnation.get()); }
bool joining() { return g_joining.load(std::memory_order_relaxed); }
void end_joining() { g_joining.store(false, std::memory_order_relaxed); }

void publish_segments(Runtime& r, int heap_fd, int data_fd) {
  g_heap_fd = heap_fd;
  g_data_fd = data_fd;
  JobControl::JoinWords* w = r.control->join(r.my_pe);
  w->pid.store(static_cast<int32_t>(::getpid()), std::memory_order_relaxed);
  w->heap_fd.store(heap_fd, std::memory_order_relaxed);
  w->data_fd.store(data_fd, std::memory_order_relaxed);
  w->joined.store(incarnation(), std::memory_order_release);
}

void close_segments() {
  if (g_heap_fd >= 0) ::close(g_heap_fd);
  if (g_data_fd >= 0) ::close(g_data_fd);
  g_heap_fd = g_data_fd = -1;
}

PeerSource published_source(const Runtime& r, int pe) {
  JobControl* jc = r.control;
  const uint32_t s = jc->state(pe)->load(std::memory_order_acquire);
  if (s != JobControl::kInitialized && s != JobControl::kJoining) return {};
  JobControl::JoinWords* w = jc->join(pe);
  // The words of the process the launcher started last under this number, complete (release above).
  if (w->joined.load(std::memory_order_acquire) != jc->incarnation(pe)->load(std::memory_order_acquire)) return {};
  return {w->pid.load(std::memory_order_relaxed), w->heap_fd.load(std::memory_order_relaxed),
          w->data_fd.load(std::memory_order_relaxed)};
}

Status init_replacement(Runtime& r, const bootstrap::JobInfo& info) {
  namespace shm = transport::shm;
  if (info.control_name.empty()) return refuse("only tessera-run starts replacements");
  if (rank_table() || std::getenv("TESSERA_HOST_ID"))
    return refuse("growing back is supported within one host (TESSERA_RANK_TABLE or TESSERA_HOST_ID is set)");
  const size_t ctl_bytes = JobControl::bytes_for(r.n_pes);
  const int ctl_fd = static_cast<int>(kControlFd.get());
  if (ctl_fd < 0) return refuse("TESSERA_JOB_CONTROL_FD is not set (only tessera-run starts replacements)");
  Result<void*> mapped = shm::open_map_of(::getpid(), ctl_fd, ctl_bytes);
  ::close(ctl_fd);
  TS_ASSIGN_OR_RETURN(void* ctl, std::move(mapped));
  r.control = static_cast<JobControl*>(ctl);
  if (r.control->magic != JobControl::kMagic || static_cast<int>(r.control->n_pes) != r.n_pes)
    return make_status(Code::kInternal, "control segment {} does not describe a job of {} PEs", info.control_name,
                       r.n_pes);
  if (!r.control->resilient.load(std::memory_order_relaxed)) return refuse("the job is not in resilient mode");
  if (r.control->incarnation(r.my_pe)->load(std::memory_order_acquire) != incarnation() ||
      r.control->state(r.my_pe)->load(std::memory_order_acquire) != JobControl::kRestarting)
    return refuse(fmt::format("the launcher's last replacement of PE {} is incarnation {}", r.my_pe,
                              r.control->incarnation(r.my_pe)->load()));

  // This process's segments, under names nobody opens: the peers map them through its descriptors.
  const std::string tag = fmt::format("{}.{}", r.my_pe, incarnation());
  int heap_fd = -1, data_fd = -1;
  const std::string heap_name = shm::segment_name(r.job_id, tag);
  TS_ASSIGN_OR_RETURN(void* mine, shm::create(heap_name, r.seg_size, kReservedBytes, kHeapAlignMax, &heap_fd));
  (void)shm::unlink(heap_name);
  r.my_base = static_cast<char*>(mine);
  DataSegment data;
  if (symmetric_data_enabled()) {
    data = find_data_segment();
    if (data.size) {
      const std::string name = shm::segment_name(r.job_id, "data-" + tag);
      TS_RETURN_IF_ERROR(share_data_segment(data, name, &data_fd));
      (void)shm::unlink(name);
      r.data_base = data.base;
      r.data_size = data.size;
      r.data_bases.assign(static_cast<size_t>(r.n_pes), nullptr);
    }
  }
  r.bases.assign(static_cast<size_t>(r.n_pes), nullptr);
  r.machine_pes = r.n_pes;

  // Every peer on this host; each live one through what it published.
  const std::vector<std::string> hosts(static_cast<size_t>(r.n_pes), host_identity(r.my_pe));
  std::vector<PeerSource> from(static_cast<size_t>(r.n_pes));
  for (int pe = 0; pe < r.n_pes; ++pe)
    if (pe != r.my_pe) from[static_cast<size_t>(pe)] = published_source(r, pe);
  TS_RETURN_IF_ERROR(connect_peers(r, hosts.data(), nullptr, from.data()));
  publish_segments(r, heap_fd, data_fd);
  g_joining.store(true, std::memory_order_relaxed);
  return Status::ok();
}

}  // namespace tessera::pgas
