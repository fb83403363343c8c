// ProcessGroupTessera (process_group.h).
#include "process_group.h"
#include "symmetric.h"

#include "tensors.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <shmem.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <set>
#include <thread>

namespace tessera_torch {
namespace {

using c10d::OpType;

bool g_started = false;  // ensure_started called shmem_init

// Resilient mode (shrink_for_next_world): the survivors' communicator, adopted by the next default group,
// and the PE of each rank of the current default group (empty: rank r is PE r).
std::optional<tc::Comm> g_next_world;
std::vector<int> g_next_world_pes, g_world_pes;
bool g_joined = false;  // a replacement's default group has joined the survivors' grow

// The live groups, so that shutdown() can let their streams finish before the interpreter ends.
std::mutex g_groups_mu;
std::set<ProcessGroupTessera*> g_groups;  // guarded by g_groups_mu

std::string where(int rank, const std::string& what) { return "tessera: rank " + std::to_string(rank) + ", " + what; }

// FNV-1a: the same on every rank (std::hash need not be).
uint64_t fnv(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

// ---- Work ----

WorkTessera::WorkTessera(int rank, OpType type, std::string what, std::vector<at::Tensor> outputs,
                         std::chrono::milliseconds timeout)
    : c10d::Work(rank, type),
      what_(std::move(what)),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool WorkTessera::isCompleted() {
  std::lock_guard lk(mutex_);
  return completed_;
}
bool WorkTessera::isSuccess() const {
  std::lock_guard lk(mutex_);
  return !exception_;
}
std::exception_ptr WorkTessera::exception() const {
  std::lock_guard lk(mutex_);
  return exception_;
}

void WorkTessera::complete(std::exception_ptr e) {
  finish(e);  // c10d::Work: sets completed_ and exception_, wakes wait()
  if (e) future_->setError(e);
  else future_->markCompleted(c10::IValue(outputs_));
}

bool WorkTessera::wait(std::chrono::milliseconds timeout) {
  const auto limit = timeout == kNoTimeout ? timeout_ : timeout;
  std::unique_lock lk(mutex_);
  if (!cv_.wait_for(lk, limit, [&] { return completed_; }))
    TORCH_CHECK(false, where(rank_, what_), ": not completed within ", limit.count() / 1000.0,
                " s (the process group's timeout, or wait's argument); another rank may not have made the call");
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

// ---- start-up ----

void ensure_started(c10d::Store& store, int rank, int size, std::chrono::milliseconds timeout) {
  if (g_started) return;
  // A job started by tessera-run, mpirun/srun (PMIx) or a user-provided rendezvous is wired already;
  // anything else (torchrun, a hand-written launcher) gets a TCP rendezvous id from rank 0 via the store.
  const bool wired = std::getenv("TESSERA_JOB_SOCKET") || std::getenv("PMIX_RANK") || std::getenv("TESSERA_BOOTSTRAP");
  if (!wired) {
    std::string id;
    if (rank == 0) {
      const char* host = std::getenv("MASTER_ADDR");
      char buf[TESSERA_BOOTSTRAP_UID_SIZE];
      TORCH_CHECK(tessera_bootstrap_uid(buf, sizeof buf, host ? host : "") == 0,
                  "tessera: rank 0 could not make a rendezvous id on ", host ? host : "this host",
                  " (MASTER_ADDR); the reason is printed above");
      id = buf;
      store.set("tessera/bootstrap", std::vector<uint8_t>(id.begin(), id.end()));
    } else {
      std::vector<uint8_t> v = store.get("tessera/bootstrap");  // waits up to the store's timeout
      id.assign(v.begin(), v.end());
    }
    ::setenv("TESSERA_BOOTSTRAP", id.c_str(), 1);
    ::setenv("TESSERA_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("TESSERA_SIZE", std::to_string(size).c_str(), 1);
  }
  // Tessera's own deadline for every wait: the group's timeout unless the user chose one.
  if (!std::getenv("TESSERA_TIMEOUT"))
    ::setenv("TESSERA_TIMEOUT", std::to_string(std::max<int64_t>(1, timeout.count() / 1000)).c_str(), 1);
  int provided = 0;
  shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
  g_started = true;
  TORCH_CHECK(shmem_my_pe() == rank && shmem_n_pes() == size, "tessera: this process is PE ", shmem_my_pe(), " of ",
              shmem_n_pes(), " in its Tessera job, but rank ", rank, " of ", size,
              " in torch.distributed: start both from one launcher (tessera-run exports RANK and WORLD_SIZE)");
  tc::throw_on_mismatch(true);
}

void shutdown() {
  if (!g_started) return;
  g_started = false;
  // A stream's thread may still be releasing the tensors of a call whose Work completed: the last
  // reference to a tensor Python has dropped takes the GIL. After the interpreter starts finalizing, a
  // thread that takes the GIL is ended by Python mid-destructor (std::terminate). So the streams finish
  // here, at exit time, with the GIL released (the binding releases it).
  std::lock_guard lk(g_groups_mu);
  for (ProcessGroupTessera* pg : g_groups) pg->drain();
  shmem_finalize();
}

// ---- the group ----

ProcessGroupTessera::ProcessGroupTessera(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                         std::chrono::milliseconds timeout, const std::string& group_id,
                                         const std::vector<int64_t>& global_ranks)
    : c10d::Backend(rank, size), timeout_(timeout) {
  try {
    if (global_ranks.empty()) {
      default_group_ = true;
      if (g_next_world) {
        // The survivors of a shrink_world: their communicator, ranks renumbered in the old order.
        TORCH_CHECK(g_next_world->rank() == rank && g_next_world->size() == size, "tessera: the default group after "
                    "shrink_world is rank ", rank, " of ", size, " but the survivors' communicator has rank ",
                    g_next_world->rank(), " of ", g_next_world->size());
        comm_ = std::move(*g_next_world);
        g_next_world.reset();
        g_world_pes = std::move(g_next_world_pes);
      } else {
        ensure_started(*store, rank, size, timeout);
        // The symmetric pool (collective: shmem_malloc), before the communicator: a replacement's allocations
        // must repeat the others' before it joins (pgas/resilient.h).
        pool_reserve(size_t{1} << 30);
        int incarnation = 0;
        if (!g_joined && tesseraIncarnation(&incarnation) == tesseraSuccess && incarnation > 0) {
          // A replacement (tessera-run --restarts): its first default group is the survivors' grow.
          comm_ = tc::Comm::join();
          g_joined = true;
          TORCH_CHECK(comm_.rank() == rank && comm_.size() == size, "tessera: a replacement's default group is rank ",
                      rank, " of ", size, " but the grown communicator has rank ", comm_.rank(), " of ", comm_.size());
          const int mine = shmem_my_pe();
          g_world_pes.assign(static_cast<size_t>(size), 0);
          comm_.allgather(&mine, g_world_pes.data(), 1, tc::DataType::kInt32);  // as grow_for_next_world's
        } else {
          comm_ = tc::Comm::world();
          g_world_pes.clear();
        }
      }
    } else {
      TORCH_CHECK(g_started, "tessera: a subgroup before the default group: init_process_group(\"tessera\") first");
      TORCH_CHECK(static_cast<int>(global_ranks.size()) == size, "tessera: group of ", size, " ranks lists ",
                  global_ranks.size(), " members");
      std::vector<int> pes(global_ranks.begin(), global_ranks.end());
      for (int& pe : pes)
        if (!g_world_pes.empty()) {
          TORCH_CHECK(pe >= 0 && pe < static_cast<int>(g_world_pes.size()), "tessera: group member ", pe,
                      " is outside the default group of ", g_world_pes.size(), " ranks");
          pe = g_world_pes[static_cast<size_t>(pe)];
        }
      comm_ = tc::Comm::from_pes(pes, fnv("torch group " + group_id), [&] { store_barrier(*store, "tessera/comm"); });
    }
    // The communicator of sends and receives: theirs alone, so that they never wait behind collectives.
    p2p_ = comm_.split(0, rank);
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, where(rank, "creating the process group: "), e.what());
  }
  coll_stream_ = std::make_unique<tc::Stream>();
  send_stream_ = std::make_unique<tc::Stream>();
  recv_stream_ = std::make_unique<tc::Stream>();
  std::lock_guard lk(g_groups_mu);
  g_groups.insert(this);
}

uintptr_t ProcessGroupTessera::register_tensor(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu(), "tessera_torch.register_tensor: the tensor is on ", t.device(), "; only CPU "
              "tensors can be registered");
  TORCH_CHECK(t.is_contiguous(), "tessera_torch.register_tensor: the tensor is not contiguous");
  drain();
  try {
    return reinterpret_cast<uintptr_t>(comm_.register_buffer(t.data_ptr(), t.numel() * t.element_size()));
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

void ProcessGroupTessera::deregister_tensor(uintptr_t handle) {
  drain();
  try {
    comm_.deregister_buffer(reinterpret_cast<void*>(handle));
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

namespace {
// A mode's name as the C++ API's value; `routine` names the Python call in the error.
tc::Comm::Compression compression_of(const char* routine, const std::string& mode) {
  using C = tc::Comm::Compression;
  static const std::pair<const char*, C> kModes[] = {
      {"none", C::kNone}, {"bf16", C::kBf16}, {"fp8", C::kFp8}, {"int8", C::kInt8}};
  const auto* m = std::find_if(std::begin(kModes), std::end(kModes), [&](const auto& e) { return mode == e.first; });
  TORCH_CHECK(m != std::end(kModes), routine, ": mode '", mode, "' is not one of none, bf16, fp8, int8");
  return m->second;
}
}  // namespace

void ProcessGroupTessera::set_compression(const std::string& mode, bool error_feedback) {
  const tc::Comm::Compression m = compression_of("tessera_torch.set_compression", mode);
  drain();
  try {
    comm_.set_compression(m, error_feedback);
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

void ProcessGroupTessera::set_allgather_compression(const std::string& mode) {
  const tc::Comm::Compression m = compression_of("tessera_torch.set_allgather_compression", mode);
  drain();
  try {
    comm_.set_allgather_compression(m);
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

namespace {
// Keeps `next` for the next default group made in this process, with each rank's PE (for its subgroups);
// collective over `next`. Returns this rank's (rank, size) in it.
std::pair<int, int> adopt_next_world(tc::Comm next) {
  const int mine = shmem_my_pe();
  std::vector<int> pes(static_cast<size_t>(next.size()));
  next.allgather(&mine, pes.data(), 1, tc::DataType::kInt32);
  const std::pair<int, int> r{next.rank(), next.size()};
  g_next_world = std::move(next);
  g_next_world_pes = std::move(pes);
  return r;
}
}  // namespace

std::pair<int, int> ProcessGroupTessera::shrink_for_next_world() {
  TORCH_CHECK(default_group_, "tessera_torch.shrink_world: shrinks the default group only");
  drain();
  try {
    return adopt_next_world(comm_.shrink());
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, where(rank_, "shrink_world: "), e.what());
  }
}

std::pair<int, int> ProcessGroupTessera::grow_for_next_world() {
  TORCH_CHECK(default_group_, "tessera_torch.grow_world: grows the default group only");
  drain();
  try {
    return adopt_next_world(comm_.grow());
  } catch (const tessera::Error& e) {
    TORCH_CHECK(false, where(rank_, "grow_world: "), e.what());
  }
}

void ProcessGroupTessera::drain() {
  for (auto* s : {coll_stream_.get(), send_stream_.get(), recv_stream_.get()}) {
    try {
      s->synchronize();
    } catch (...) {  // a failed call was reported to its Work; here only the end matters
    }
  }
}

ProcessGroupTessera::~ProcessGroupTessera() {
  // Destruction is not collective in torch (a group goes when Python drops it): wait for this rank's work,
  // then free this rank's part only. Python drops it holding the GIL, which the streams' threads may need
  // to release tensors: they get it while this thread waits.
  std::optional<pybind11::gil_scoped_release> nogil;
  if (Py_IsInitialized() && PyGILState_Check()) nogil.emplace();
  {
    std::lock_guard lk(g_groups_mu);
    g_groups.erase(this);
  }
  drain();
  coll_stream_.reset();
  send_stream_.reset();
  recv_stream_.reset();
  p2p_.release();
  comm_.release();
}

void ProcessGroupTessera::abort() {
  aborted_.store(true, std::memory_order_release);
}

at::Tensor ProcessGroupTessera::scratch(int slot, int64_t numel, at::ScalarType type) {
  at::Tensor& s = scratch_[slot];
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(type));
  if (!s.defined() || s.numel() < bytes) s = at::empty({bytes}, at::kByte);
  return s.narrow(0, 0, bytes).view(type);
}

at::Tensor ProcessGroupTessera::packed(const std::vector<at::Tensor>& v, int slot) {
  const at::ScalarType type = v[0].scalar_type();
  if (void* p = adjacent(v)) return at::from_blob(p, {total_numel(v)}, at::TensorOptions().dtype(type));
  at::Tensor flat = scratch(slot, total_numel(v), type);
  int64_t off = 0;
  for (const auto& t : v) {
    flat.narrow(0, off, t.numel()).copy_(t.reshape({-1}));
    off += t.numel();
  }
  return flat;
}

at::Tensor ProcessGroupTessera::unpacked_target(const std::vector<at::Tensor>& v, int slot) {
  const at::ScalarType type = v[0].scalar_type();
  if (void* p = adjacent(v)) return at::from_blob(p, {total_numel(v)}, at::TensorOptions().dtype(type));
  return scratch(slot, total_numel(v), type);
}

void ProcessGroupTessera::store_barrier(c10d::Store& store, const std::string& name) {
  const std::string key = name + "/" + std::to_string(barriers_++);
  store.add(key, 1);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto pause = std::chrono::microseconds(50);
  while (store.add(key, 0) < getSize()) {
    TORCH_CHECK(std::chrono::steady_clock::now() < deadline, where(getRank(), "creating a group: "),
                "not every member arrived within the timeout (", key, ")");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::run(OpType type, std::string what, std::vector<at::Tensor> outputs,
                                                        size_t bytes, Lane lane,
                                                        std::function<void(WorkTessera&)> fn) {
  auto work = c10::make_intrusive<WorkTessera>(getRank(), type, std::move(what), std::move(outputs), timeout_);
  auto body = [this, fn = std::move(fn), rank = getRank()](WorkTessera& w) {
    if (aborted_.load(std::memory_order_acquire)) {
      w.complete(std::make_exception_ptr(std::runtime_error(where(rank, w.what()) + ": the group was aborted")));
      return;
    }
    try {
      fn(w);
    } catch (const c10::Error&) {
      w.complete(std::current_exception());
      return;
    } catch (const std::exception& e) {  // Tessera's errors: argument checks, collective mismatches
      w.complete(std::make_exception_ptr(std::runtime_error(where(rank, w.what()) + ": " + e.what())));
      return;
    } catch (...) {
      w.complete(std::current_exception());
      return;
    }
    w.complete(nullptr);
  };
  std::lock_guard lk(issue_mu_);
  if (lane == Lane::kColl && bytes <= inline_bytes_ && coll_pending_.load(std::memory_order_acquire) == 0) {
    body(*work);
    return work;
  }
  tc::Stream& s = lane == Lane::kColl ? *coll_stream_ : lane == Lane::kSend ? *send_stream_ : *recv_stream_;
  if (lane == Lane::kColl) coll_pending_.fetch_add(1, std::memory_order_relaxed);
  s.enqueue(work->what(), [this, work, body, lane] {
    body(*work);
    if (lane == Lane::kColl) coll_pending_.fetch_sub(1, std::memory_order_release);
  });
  return work;
}

}  // namespace tessera_torch
