// ProcessGroupTessera (process_group.h).
#include "process_group.h"
#include "tensors.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>
#include <shmem.h>

#include <cstdlib>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

namespace tessera_torch {
namespace {

using c10d::OpType;

bool g_started = false;  // ensure_started called shmem_init

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
      ensure_started(*store, rank, size, timeout);
      comm_ = tc::Comm::world();
    } else {
      TORCH_CHECK(g_started, "tessera: a subgroup before the default group: init_process_group(\"tessera\") first");
      TORCH_CHECK(static_cast<int>(global_ranks.size()) == size, "tessera: group of ", size, " ranks lists ",
                  global_ranks.size(), " members");
      std::vector<int> pes(global_ranks.begin(), global_ranks.end());
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

#define TS_WHAT(call) (std::string(call) + " on group of " + std::to_string(getSize()))

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::broadcast(std::vector<at::Tensor>& tensors,
                                                              const c10d::BroadcastOptions& opts) {
  const at::Tensor t = single(tensors, "broadcast");
  const auto dt = data_type_of(t, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  return run(OpType::BROADCAST, TS_WHAT("broadcast"), {t}, bytes_of(t), Lane::kColl, [=, this](WorkTessera&) {
    at::Tensor w = dense(t);
    comm_.broadcast(w.data_ptr(), w.data_ptr(), w.numel(), dt, root);
    copy_back(t, w);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allreduce(std::vector<at::Tensor>& tensors,
                                                              const c10d::AllreduceOptions& opts) {
  const at::Tensor t = single(tensors, "allreduce");
  const auto dt = data_type_of(t, "allreduce");
  const auto op = red_op_of(opts.reduceOp, t, "allreduce");
  const auto factor = premul_factor(opts.reduceOp);
  return run(OpType::ALLREDUCE, TS_WHAT("allreduce"), {t}, bytes_of(t), Lane::kColl, [=, this](WorkTessera&) {
    at::Tensor w = dense(t);
    if (factor) w.mul_(*factor);
    comm_.allreduce(w.data_ptr(), w.data_ptr(), w.numel(), dt, op);
    copy_back(t, w);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                        const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "tessera: allreduce_coalesced: no tensors");
  for (const auto& t : tensors) {
    check_cpu(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "tessera: allreduce_coalesced: tensors of types ",
                tensors[0].scalar_type(), " and ", t.scalar_type(), "; one type per call");
  }
  const auto dt = data_type_of(tensors[0], "allreduce_coalesced");
  const auto op = red_op_of(opts.reduceOp, tensors[0], "allreduce_coalesced");
  const auto factor = premul_factor(opts.reduceOp);
  size_t bytes = 0;
  for (const auto& t : tensors) bytes += bytes_of(t);
  std::vector<at::Tensor> ts = tensors;
  return run(OpType::ALLREDUCE_COALESCED, TS_WHAT("allreduce_coalesced"), ts, bytes, Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor flat = packed(ts, 0);
               if (factor) flat.mul_(*factor);
               comm_.allreduce(flat.data_ptr(), flat.data_ptr(), flat.numel(), dt, op);
               unpack(flat, ts);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::reduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::ReduceOptions& opts) {
  const at::Tensor t = single(tensors, "reduce");
  const auto dt = data_type_of(t, "reduce");
  const auto op = red_op_of(opts.reduceOp, t, "reduce");
  const auto factor = premul_factor(opts.reduceOp);
  const int root = static_cast<int>(opts.rootRank);
  return run(OpType::REDUCE, TS_WHAT("reduce"), {t}, bytes_of(t), Lane::kColl, [=, this](WorkTessera&) {
    at::Tensor w = dense(t);
    if (factor) w.mul_(*factor);
    comm_.reduce(w.data_ptr(), w.data_ptr(), w.numel(), dt, op, root);
    copy_back(t, w);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllgatherOptions&) {
  const at::Tensor in = single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), "tessera: allgather: needs one "
              "list of ", getSize(), " output tensors");
  check_same(outputs[0], in, "allgather", "output");
  const auto dt = data_type_of(in, "allgather");
  std::vector<at::Tensor> outs = outputs[0];
  return run(OpType::ALLGATHER, TS_WHAT("allgather"), outs, bytes_of(in) * getSize(), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor src = dense(in);
               at::Tensor flat = unpacked_target(outs, 0);
               comm_.allgather(src.data_ptr(), flat.data_ptr(), in.numel(), dt);
               unpack(flat, outs);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                    const c10d::AllgatherOptions&) {
  check_cpu(output, "_allgather_base");
  check_cpu(input, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "tessera: _allgather_base: the output has ", output.numel(), " ", output.scalar_type(), " elements; it needs ",
              input.numel() * getSize(), " ", input.scalar_type(), " (", getSize(), " x the input)");
  const auto dt = data_type_of(input, "_allgather_base");
  at::Tensor in = input, out = output;
  return run(OpType::_ALLGATHER_BASE, TS_WHAT("_allgather_base"), {out}, bytes_of(out), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor src = dense(in), dst = dense(out);
               comm_.allgather(src.data_ptr(), dst.data_ptr(), in.numel(), dt);
               copy_back(out, dst);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::AllgatherOptions&) {
  TORCH_CHECK(outputs.size() == static_cast<size_t>(getSize()), "tessera: allgather_coalesced: needs ", getSize(),
              " output lists (one per rank), got ", outputs.size());
  for (const auto& t : inputs) check_cpu(t, "allgather_coalesced");
  for (const auto& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "tessera: allgather_coalesced: an output list has ", list.size(),
                " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < list.size(); ++i) check_same({list[i]}, inputs[i], "allgather_coalesced", "output");
  }
  TORCH_CHECK(!inputs.empty(), "tessera: allgather_coalesced: no tensors");
  for (const auto& t : inputs)
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), "tessera: allgather_coalesced: one type per call");
  const auto dt = data_type_of(inputs[0], "allgather_coalesced");
  std::vector<at::Tensor> ins = inputs;
  std::vector<std::vector<at::Tensor>> outs = outputs;
  std::vector<at::Tensor> all;
  for (const auto& l : outs) all.insert(all.end(), l.begin(), l.end());
  size_t bytes = 0;
  for (const auto& t : ins) bytes += bytes_of(t);
  return run(OpType::ALLGATHER_COALESCED, TS_WHAT("allgather_coalesced"), all, bytes * getSize(), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor src = packed(ins, 0);
               std::vector<at::Tensor> all;
               for (const auto& list : outs) all.insert(all.end(), list.begin(), list.end());
               at::Tensor flat = unpacked_target(all, 1);
               comm_.allgather(src.data_ptr(), flat.data_ptr(), src.numel(), dt);
               unpack(flat, all);
             });
}

// outputs[i] (n x inputs[i]) gathers inputs[i] of every rank: the inputs go out packed as one block, and
// rank r's block is cut back into each output's r-th slice.
c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                    std::vector<at::Tensor>& inputs,
                                                                                    const c10d::AllgatherOptions&) {
  const char* call = "allgather_into_tensor_coalesced";
  const int n = getSize();
  check_coalesced(inputs, outputs, n, /*outputs_are_whole=*/true, call);
  const auto dt = data_type_of(inputs[0], call);
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  const int64_t block = total_numel(ins);
  return run(OpType::COALESCED, TS_WHAT(call), outs,
             static_cast<size_t>(block * n) * ins[0].element_size(),
             Lane::kColl, [=, this](WorkTessera&) {
               at::Tensor src = packed(ins, 0);
               at::Tensor all = scratch(1, block * n, ins[0].scalar_type());
               comm_.allgather(src.data_ptr(), all.data_ptr(), static_cast<size_t>(block), dt);
               int64_t off = 0;
               for (size_t i = 0; i < outs.size(); ++i) {
                 const int64_t m = ins[i].numel();
                 // all[r][off : off + m] -> outs[i][r * m : (r + 1) * m], for every r at once
                 at::Tensor o = dense(outs[i]);
                 o.view({n, m}).copy_(all.view({n, block}).narrow(1, off, m));
                 copy_back(outs[i], o);
                 off += m;
               }
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::GatherOptions& opts) {
  const at::Tensor in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), "tessera: gather: the root "
                "needs one list of ", getSize(), " output tensors");
    check_same(outputs[0], in, "gather", "output");
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "tessera: gather: only the root ", root, " takes outputs");
  }
  const auto dt = data_type_of(in, "gather");
  return run(OpType::GATHER, TS_WHAT("gather"), outs, bytes_of(in) * getSize(), Lane::kColl, [=, this](WorkTessera&) {
    at::Tensor src = dense(in);
    at::Tensor flat = outs.empty() ? at::Tensor() : unpacked_target(outs, 0);
    comm_.gather(src.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, in.numel(), dt, root);
    if (flat.defined()) unpack(flat, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::scatter(std::vector<at::Tensor>& outputs,
                                                            std::vector<std::vector<at::Tensor>>& inputs,
                                                            const c10d::ScatterOptions& opts) {
  const at::Tensor out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), "tessera: scatter: the root "
                "needs one list of ", getSize(), " input tensors");
    check_same(inputs[0], out, "scatter", "input");
    ins = inputs[0];
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(), "tessera: scatter: only the root ", root, " takes inputs");
  }
  const auto dt = data_type_of(out, "scatter");
  return run(OpType::SCATTER, TS_WHAT("scatter"), {out}, bytes_of(out) * getSize(), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor flat = ins.empty() ? at::Tensor() : packed(ins, 0);
               at::Tensor dst = dense(out);
               comm_.scatter(flat.defined() ? flat.data_ptr() : nullptr, dst.data_ptr(), out.numel(), dt, root);
               copy_back(out, dst);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                   std::vector<std::vector<at::Tensor>>& inputs,
                                                                   const c10d::ReduceScatterOptions& opts) {
  const at::Tensor out = single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), "tessera: reduce_scatter: needs "
              "one list of ", getSize(), " input tensors");
  check_same(inputs[0], out, "reduce_scatter", "input");
  const auto dt = data_type_of(out, "reduce_scatter");
  const auto op = red_op_of(opts.reduceOp, out, "reduce_scatter");
  const auto factor = premul_factor(opts.reduceOp);
  std::vector<at::Tensor> ins = inputs[0];
  return run(OpType::REDUCE_SCATTER, TS_WHAT("reduce_scatter"), {out}, bytes_of(out) * getSize(), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor flat = scaled(packed(ins, 0), factor);
               at::Tensor dst = dense(out);
               comm_.reduce_scatter(flat.data_ptr(), dst.data_ptr(), out.numel(), dt, op);
               copy_back(out, dst);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                         const c10d::ReduceScatterOptions& opts) {
  check_cpu(output, "_reduce_scatter_base");
  check_cpu(input, "_reduce_scatter_base");
  TORCH_CHECK(input.numel() == output.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "tessera: _reduce_scatter_base: the input has ", input.numel(), " ", input.scalar_type(),
              " elements; it needs ", output.numel() * getSize(), " ", output.scalar_type(), " (", getSize(),
              " x the output)");
  const auto dt = data_type_of(output, "_reduce_scatter_base");
  const auto op = red_op_of(opts.reduceOp, output, "_reduce_scatter_base");
  const auto factor = premul_factor(opts.reduceOp);
  at::Tensor in = input, out = output;
  return run(OpType::_REDUCE_SCATTER_BASE, TS_WHAT("_reduce_scatter_base"), {out}, bytes_of(in), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor src = scaled(dense(in), factor), dst = dense(out);
               comm_.reduce_scatter(src.data_ptr(), dst.data_ptr(), out.numel(), dt, op);
               copy_back(out, dst);
             });
}

// outputs[i] is this rank's slice of the reduction of inputs[i] (n x outputs[i]): the inputs are packed so
// that rank r's block holds the r-th slice of every input in turn, then reduce-scattered as one call.
c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                    std::vector<at::Tensor>& inputs,
                                                                                    const c10d::ReduceScatterOptions& opts) {
  const char* call = "reduce_scatter_tensor_coalesced";
  const int n = getSize();
  check_coalesced(inputs, outputs, n, /*outputs_are_whole=*/false, call);
  const auto dt = data_type_of(outputs[0], call);
  const auto op = red_op_of(opts.reduceOp, outputs[0], call);
  const auto factor = premul_factor(opts.reduceOp);
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  const int64_t block = total_numel(outs);
  return run(OpType::REDUCE_SCATTER_TENSOR_COALESCED, TS_WHAT(call), outs,
             static_cast<size_t>(block * n) * outs[0].element_size(),
             Lane::kColl, [=, this](WorkTessera&) {
               at::Tensor all = scratch(0, block * n, outs[0].scalar_type());
               int64_t off = 0;
               for (size_t i = 0; i < ins.size(); ++i) {
                 const int64_t m = outs[i].numel();
                 all.view({n, block}).narrow(1, off, m).copy_(scaled(ins[i].reshape({n, m}), factor));
                 off += m;
               }
               at::Tensor mine = scratch(1, block, outs[0].scalar_type());
               comm_.reduce_scatter(all.data_ptr(), mine.data_ptr(), static_cast<size_t>(block), dt, op);
               unpack(mine, outs);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                  std::vector<int64_t>& output_split_sizes,
                                                                  std::vector<int64_t>& input_split_sizes,
                                                                  const c10d::AllToAllOptions&) {
  check_cpu(output, "alltoall_base");
  check_cpu(input, "alltoall_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tessera: alltoall_base: input ", input.scalar_type(),
              ", output ", output.scalar_type());
  const auto dt = data_type_of(input, "alltoall_base");
  const int n = getSize();
  at::Tensor in = input, out = output;
  if (output_split_sizes.empty() && input_split_sizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % n == 0, "tessera: alltoall_base: input and output "
                "have ", input.numel(), " and ", output.numel(), " elements; without split sizes both need the same "
                "number, divisible by the group's size ", n);
    return run(OpType::ALLTOALL_BASE, TS_WHAT("alltoall_base"), {out}, bytes_of(in), Lane::kColl,
               [=, this](WorkTessera&) {
                 at::Tensor src = dense(in), dst = dense(out);
                 comm_.alltoall(src.data_ptr(), dst.data_ptr(), in.numel() / n, dt);
                 copy_back(out, dst);
               });
  }
  // Split sizes count rows (the first dimension); Tessera counts elements.
  auto counts = [n](const at::Tensor& t, const std::vector<int64_t>& split, const char* which) {
    const int64_t rows = t.dim() ? t.size(0) : 1;
    const int64_t row = rows ? t.numel() / rows : 0;
    std::vector<size_t> c(static_cast<size_t>(n)), d(static_cast<size_t>(n));
    int64_t total = 0;
    if (split.empty()) {
      TORCH_CHECK(rows % n == 0, "tessera: alltoall_base: ", which, " has ", rows, " rows, not divisible by ", n);
      for (int i = 0; i < n; ++i) c[i] = static_cast<size_t>(rows / n * row);
      total = rows;
    } else {
      TORCH_CHECK(static_cast<int>(split.size()) == n, "tessera: alltoall_base: ", which, " split sizes list ",
                  split.size(), " entries for ", n, " ranks");
      for (int i = 0; i < n; ++i) {
        TORCH_CHECK(split[i] >= 0, "tessera: alltoall_base: ", which, " split size ", i, " is negative (", split[i], ")");
        c[i] = static_cast<size_t>(split[i] * row);
        total += split[i];
      }
      TORCH_CHECK(total == rows, "tessera: alltoall_base: ", which, " split sizes add up to ", total, " rows; the tensor has ",
                  rows);
    }
    size_t off = 0;
    for (int i = 0; i < n; ++i) {
      d[i] = off;
      off += c[i];
    }
    return std::pair{c, d};
  };
  auto [sc, sd] = counts(in, input_split_sizes, "input");
  auto [rc, rd] = counts(out, output_split_sizes, "output");
  return run(OpType::ALLTOALL_BASE, TS_WHAT("alltoall_base"), {out}, bytes_of(in) + bytes_of(out), Lane::kColl,
             [=, this](WorkTessera&) {
               at::Tensor src = dense(in), dst = dense(out);
               comm_.alltoallv(src.data_ptr(), sc.data(), sd.data(), dst.data_ptr(), rc.data(), rd.data(), dt);
               copy_back(out, dst);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::alltoall(std::vector<at::Tensor>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllToAllOptions&) {
  const int n = getSize();
  TORCH_CHECK(static_cast<int>(inputs.size()) == n && static_cast<int>(outputs.size()) == n, "tessera: alltoall: needs ",
              n, " input and ", n, " output tensors, got ", inputs.size(), " and ", outputs.size());
  for (int i = 0; i < n; ++i) {
    check_cpu(inputs[i], "alltoall");
    check_cpu(outputs[i], "alltoall");
    TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type() && outputs[i].scalar_type() == inputs[0].scalar_type(),
                "tessera: alltoall: one type per call");
  }
  const auto dt = data_type_of(inputs[0], "alltoall");
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  size_t so = 0, ro = 0, bytes = 0;
  for (int i = 0; i < n; ++i) {
    sc[i] = static_cast<size_t>(inputs[i].numel());
    rc[i] = static_cast<size_t>(outputs[i].numel());
    sd[i] = so;
    rd[i] = ro;
    so += sc[i];
    ro += rc[i];
    bytes += bytes_of(inputs[i]) + bytes_of(outputs[i]);
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  return run(OpType::ALLTOALL, TS_WHAT("alltoall"), outs, bytes, Lane::kColl, [=, this](WorkTessera&) {
    at::Tensor src = packed(ins, 0);
    at::Tensor dst = unpacked_target(outs, 1);
    comm_.alltoallv(src.data_ptr(), sc.data(), sd.data(), dst.data_ptr(), rc.data(), rd.data(), dt);
    unpack(dst, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::barrier(const c10d::BarrierOptions&) {
  return run(OpType::BARRIER, TS_WHAT("barrier"), {}, 0, Lane::kColl, [this](WorkTessera&) { comm_.barrier(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::send(std::vector<at::Tensor>& tensors, int dst, int) {
  const at::Tensor t = single(tensors, "send");
  const auto dt = data_type_of(t, "send");
  TORCH_CHECK(dst >= 0 && dst < getSize() && dst != getRank(), "tessera: send: destination rank ", dst,
              " is out of range or this rank (group of ", getSize(), ")");
  // The data is read when the send runs: a contiguous copy now keeps later changes to t out of it.
  at::Tensor src = t.contiguous();
  return run(OpType::SEND, TS_WHAT("send to rank " + std::to_string(dst)), {t}, bytes_of(t), Lane::kSend,
             [=, this](WorkTessera&) { p2p_.send(src.data_ptr(), src.numel(), dt, dst); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::recv(std::vector<at::Tensor>& tensors, int src, int) {
  const at::Tensor t = single(tensors, "recv");
  const auto dt = data_type_of(t, "recv");
  TORCH_CHECK(src >= 0 && src < getSize() && src != getRank(), "tessera: recv: source rank ", src,
              " is out of range or this rank (group of ", getSize(), ")");
  return run(OpType::RECV, TS_WHAT("recv from rank " + std::to_string(src)), {t}, bytes_of(t), Lane::kRecv,
             [=, this](WorkTessera& w) {
               at::Tensor dst = dense(t);
               p2p_.recv(dst.data_ptr(), dst.numel(), dt, src);
               copy_back(t, dst);
               w.set_source(src);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::recvAnysource(std::vector<at::Tensor>& tensors, int) {
  const at::Tensor t = single(tensors, "recv");
  const auto dt = data_type_of(t, "recv");
  return run(OpType::RECVANYSOURCE, TS_WHAT("recv from any rank"), {t}, bytes_of(t), Lane::kRecv,
             [=, this](WorkTessera& w) {
               at::Tensor dst = dense(t);
               const int from = p2p_.recv_any(dst.data_ptr(), dst.numel(), dt);
               copy_back(t, dst);
               w.set_source(from);
             });
}

}  // namespace tessera_torch
