#include "host_control.h"

#include <unistd.h>

#include <atomic>

#include "agent_wire.h"
#include "proc.h"
#include "sync/futex.h"
#include "transport/shm/segment.h"

namespace tessera::run {
namespace {
namespace shm = transport::shm;
using Records = sync::FailRecords;

void put64(Writer& w, uint64_t v) { w.u32(static_cast<uint32_t>(v)).u32(static_cast<uint32_t>(v >> 32)); }
uint64_t get64(Reader& r) {
  const uint64_t lo = r.u32();
  return lo | uint64_t{r.u32()} << 32;
}
}  // namespace

HostControl::~HostControl() {
  if (ctl_) shm::unmap(ctl_, bytes_);
}

Status HostControl::create(const std::string& job_id, uint32_t host_index, uint32_t n_pes) {
  name_ = shm::segment_name(job_id, fmt::format("{}-{}", shm::kControlSegment, host_index));
  bytes_ = pgas::JobControl::bytes_for(static_cast<int>(n_pes));
  TS_ASSIGN_OR_RETURN(void* p, shm::create(name_, bytes_));
  ctl_ = static_cast<pgas::JobControl*>(p);
  // As tessera-run on one host (job.cc), the agent in the launcher's place: a later launcher of this user
  // removes what a killed agent left (tools/run/proc.h).
  ctl_->launcher_pid = static_cast<int32_t>(::getpid());  // before the magic: a reader checks the magic first
  ctl_->launcher_pidns = pid_namespace();
  ctl_->magic = pgas::JobControl::kMagic;
  ctl_->n_pes = n_pes;
  ctl_->resilient.store(1);
  return Status::ok();
}

void HostControl::ring_all() {
  for (uint32_t p = 0; p < ctl_->n_pes; ++p) {
    ctl_->pe_words()[p].rung.store(1);
    ctl_->pe_words()[p].doorbell.fetch_add(1);
    sync::futex_wake(&ctl_->pe_words()[p].doorbell);
  }
}

void HostControl::mark_failed(uint32_t rank, uint32_t index) {
  if (!ctl_ || rank >= ctl_->n_pes || ctl_->failed(static_cast<int>(rank))) return;
  ctl_->fail_index(static_cast<int>(rank))->store(index);
  ctl_->state(static_cast<int>(rank))->store(pgas::JobControl::kFailed);
  ctl_->failures.fetch_add(1, std::memory_order_release);
  ring_all();
}

bool HostControl::read(uint32_t rank, Snapshot* out) {
  Records& rec = *ctl_->records(static_cast<int>(rank));
  for (int i = 0; i < Records::kAgree; ++i) {
    Records::Agree& a = rec.agree[i];
    const uint32_t v = a.version.load(std::memory_order_acquire);
    if (v & 1) return false;
    out->uid[i] = a.uid.load(std::memory_order_relaxed);
    out->epoch[i] = a.epoch.load(std::memory_order_relaxed);
    out->failures[i] = a.failures.load(std::memory_order_relaxed);
    out->flag[i] = a.flag.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (a.version.load(std::memory_order_relaxed) != v) return false;
  }
  for (int i = 0; i < Records::kRevoke; ++i) {
    const uint64_t by = rec.revoke[i].by.load(std::memory_order_acquire);
    out->revoke_uid[i] = rec.revoke[i].uid.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (rec.revoke[i].by.load(std::memory_order_relaxed) != by) return false;
    out->revoke_by[i] = by;
  }
  out->leaves = ctl_->leaves(static_cast<int>(rank))->load(std::memory_order_acquire);
  return true;
}

std::vector<char> HostControl::changed(uint32_t rank) {
  Snapshot now;
  if (!ctl_ || rank >= ctl_->n_pes || !read(rank, &now)) return {};
  auto it = sent_.find(rank);
  if (it != sent_.end() && it->second == now) return {};
  sent_[rank] = now;
  Writer w;
  w.u32(rank).u32(now.leaves);
  for (int i = 0; i < Records::kAgree; ++i) {
    put64(w, now.uid[i]);
    put64(w, now.epoch[i]);
    w.u32(now.failures[i]).u32(now.flag[i]);
  }
  for (int i = 0; i < Records::kRevoke; ++i) {
    put64(w, now.revoke_uid[i]);
    put64(w, now.revoke_by[i]);
  }
  return w.bytes();
}

bool HostControl::apply(const std::vector<char>& payload) {
  if (!ctl_) return false;
  Reader r(payload);
  const uint32_t rank = r.u32();
  Snapshot in;
  in.leaves = r.u32();
  for (int i = 0; i < Records::kAgree; ++i) {
    in.uid[i] = get64(r);
    in.epoch[i] = get64(r);
    in.failures[i] = r.u32();
    in.flag[i] = r.u32();
  }
  for (int i = 0; i < Records::kRevoke; ++i) {
    in.revoke_uid[i] = get64(r);
    in.revoke_by[i] = get64(r);
  }
  if (!r.ok_and_done() || rank >= ctl_->n_pes) return false;
  // Written as the PE writes its own (coll/resilience.cc): a reader takes an agreement record once it reads
  // its epoch with the communicator's uid, and a revocation once it reads `by`.
  Records& rec = *ctl_->records(static_cast<int>(rank));
  for (int i = 0; i < Records::kAgree; ++i) {
    Records::Agree& a = rec.agree[i];
    if (a.uid.load() == in.uid[i] && a.epoch.load() == in.epoch[i] && a.failures.load() == in.failures[i] &&
        a.flag.load() == in.flag[i])
      continue;
    a.version.fetch_add(1, std::memory_order_relaxed);
    a.epoch.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    a.uid.store(in.uid[i], std::memory_order_relaxed);
    a.failures.store(in.failures[i], std::memory_order_relaxed);
    a.flag.store(in.flag[i], std::memory_order_relaxed);
    a.epoch.store(in.epoch[i], std::memory_order_release);
    a.version.fetch_add(1, std::memory_order_release);
  }
  bool revoked = false;
  for (int i = 0; i < Records::kRevoke; ++i) {
    Records::Revoke& v = rec.revoke[i];
    if (v.uid.load() == in.revoke_uid[i] && v.by.load() == in.revoke_by[i]) continue;
    v.by.store(0, std::memory_order_relaxed);
    v.uid.store(in.revoke_uid[i], std::memory_order_relaxed);
    v.by.store(in.revoke_by[i], std::memory_order_release);
    revoked = revoked || in.revoke_by[i] != 0;
  }
  if (revoked) ctl_->revocations.fetch_add(1, std::memory_order_acq_rel);
  ctl_->leaves(static_cast<int>(rank))->store(in.leaves, std::memory_order_release);
  ring_all();
  return true;
}

}  // namespace tessera::run
