// ProcessGroupTessera: torch.distributed's backend "tessera", a c10d::Backend (torch 2) over Tessera's
// collective library (tessera/coll.hpp), registered for CPU tensors.
//
// Contracts (besides c10d's):
// - The group's ranks are Tessera PEs: the default group's rank r is PE r (after a shrink_world, the r-th
//   survivor's PE; subgroups map their global ranks through it) (the first group made in a
//   process starts Tessera: under tessera-run, mpirun or srun it joins that job; under torchrun and friends
//   rank 0 makes a TCP rendezvous id and hands it to the others through the c10d store). A subgroup
//   (dist.new_group) is a communicator made by its members alone (Comm::from_pes), synchronized through
//   the store, since torch does not call non-members.
// - Collectives run in issue order on one comm stream per group (the group's communicator belongs to that
//   stream). A call of at most `inline_bytes` made while the stream is idle runs at once on the calling
//   thread (a small collective is done before a thread hop would be); every other call is enqueued and its
//   Work completes on the stream's thread. Either way the caller's tensors must not change until wait().
// - Sends and receives run on two more streams over a communicator of their own, one for sends and one
//   for receives, so a send never waits behind a receive of the same rank (both sides may send first).
//   Tags are not matched: messages between a pair arrive in the order they were sent.
// - Failures (bad arguments, a collective mismatch between ranks) complete the Work with an exception
//   carrying Tessera's message; wait() raises it. wait() honours the group's timeout (or its argument) and
//   then raises an error naming the rank, the call and the time waited.
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <tessera/coll.hpp>

namespace tessera_torch {

namespace tc = tessera::coll;

class WorkTessera : public c10d::Work {
 public:
  WorkTessera(int rank, c10d::OpType type, std::string what, std::vector<at::Tensor> outputs,
              std::chrono::milliseconds timeout);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override {}
  int sourceRank() const override { return source_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Called once, by whoever ran the operation.
  void complete(std::exception_ptr e);
  void set_source(int r) { source_ = r; }
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_ = -1;
};

class ProcessGroupTessera : public c10d::Backend {
 public:
  // global_ranks: the default group's PE of each rank (empty for the default group itself).
  ProcessGroupTessera(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                      std::chrono::milliseconds timeout, const std::string& group_id,
                      const std::vector<int64_t>& global_ranks);
  ~ProcessGroupTessera() override;

  const std::string getBackendName() const override { return "tessera"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  // The group's deadline for wait() (dist.distributed_c10d._set_pg_timeout); Tessera's own waits keep theirs.
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  // Ends this rank's use of the group: work not yet run completes with an error, and later calls fail.
  void abort() override;
  void shutdown() override { drain(); }

  // Calls of at most this many bytes made while the stream is idle run on the calling thread.
  size_t inline_bytes() const { return inline_bytes_; }
  void set_inline_bytes(size_t b) { inline_bytes_ = b; }
  tc::Comm& comm() { return comm_; }
  // A tensor's memory registered with the group's communicator (coll.h: tesseraCommRegister), after the
  // group's streams have drained: collective over the group's ranks, in the same order on each. The tensor
  // must be contiguous on the CPU; the handle is for deregister_tensor.
  uintptr_t register_tensor(const at::Tensor& t);
  void deregister_tensor(uintptr_t handle);
  // Compression of the phase between hosts for this group's float32 sum and average reductions (coll.h:
  // tesseraCommSetCompression), after the group's streams have drained: collective over the group's ranks.
  // mode: "none", "bf16", "fp8" or "int8".
  void set_compression(const std::string& mode, bool error_feedback);
  // Float32 all-gathers coded between hosts (tesseraCommSetAllGatherCompression); collective, as above.
  void set_allgather_compression(const std::string& mode);
  // Waits until this rank's streams have run (and released) everything enqueued; errors stay with their Work.
  void drain();
  // Resilient mode (tessera-run --on-failure continue; docs/resilience.md), on the default group only: after
  // a collective failed for a dead rank, shrinks the group's communicator to the survivors (collective over
  // them) and keeps it for the next default group made in this process (tessera_torch.shrink_world:
  // destroy_process_group, then init_process_group of the survivors). Returns this rank's (rank, size) in it.
  std::pair<int, int> shrink_for_next_world();
  // Resilient mode with tessera-run --restarts: grows the default group's communicator to take in the
  // replacements (tesseraCommGrow; collective with them, whose first default group joins it) and keeps it for
  // the next default group, as shrink_for_next_world does. Returns this rank's (rank, size) in it.
  std::pair<int, int> grow_for_next_world();

 private:
  enum class Lane { kColl, kSend, kRecv };
  c10::intrusive_ptr<c10d::Work> run(c10d::OpType type, std::string what, std::vector<at::Tensor> outputs,
                                     size_t bytes, Lane lane, std::function<void(WorkTessera&)> fn);
  void store_barrier(c10d::Store& store, const std::string& name);
  // Reused staging for lists of tensors (two slots: some calls pack inputs and outputs), so that a call does
  // not fault in fresh pages every time. Used only by collectives, one at a time.
  at::Tensor scratch(int slot, int64_t numel, at::ScalarType type);
  // The list's elements as one flat tensor: in place when they lie end to end, else packed into a slot.
  at::Tensor packed(const std::vector<at::Tensor>& v, int slot);
  // Where a call should write the list's elements: in place when they lie end to end, else a slot (then
  // unpack() copies them out).
  at::Tensor unpacked_target(const std::vector<at::Tensor>& v, int slot);

  std::chrono::milliseconds timeout_;
  bool default_group_ = false;
  tc::Comm comm_;
  tc::Comm p2p_;
  std::unique_ptr<tc::Stream> coll_stream_, send_stream_, recv_stream_;
  std::mutex issue_mu_;                 // one issuing thread at a time
  std::atomic<int64_t> coll_pending_{0};  // collectives enqueued and not yet finished
  size_t inline_bytes_ = size_t{64} << 10;
  int barriers_ = 0;
  std::atomic<bool> aborted_{false};
  at::Tensor scratch_[2];
};

// Starts Tessera in this process if nothing has (the default group's creation does it), as described above.
void ensure_started(c10d::Store& store, int rank, int size, std::chrono::milliseconds timeout);
// Ends Tessera if ensure_started started it (at interpreter exit): collective over all PEs.
void shutdown();


}  // namespace tessera_torch
