// ProcessGroupTessera's c10d entry points (process_group.h): each checks its tensors, then runs one
// collective of the group's communicator on the group's stream (ProcessGroupTessera::run, in
// process_group.cc, which owns the group's life, its streams and its Work).
#include "process_group.h"
#include "tensors.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>


namespace tessera_torch {

using c10d::OpType;

#define TS_WHAT(call) (std::string(call) + " on group of " + std::to_string(getSize()))

namespace {
// The tensors a rooted call takes at its root only (gather's outputs, scatter's inputs): there, one list of
// `size` tensors like `like`; elsewhere none. `role` names them ("output", "input") in the errors.
std::vector<at::Tensor> root_list(std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like, int rank,
                                  int size, int root, const char* call, const char* role) {
  if (rank != root) {
    TORCH_CHECK(lists.empty() || lists[0].empty(), "tessera: ", call, ": only the root ", root, " takes ", role, "s");
    return {};
  }
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == size, "tessera: ", call,
              ": the root needs one list of ", size, " ", role, " tensors");
  check_same(lists[0], like, call, role);
  return lists[0];
}
}  // namespace

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
  const std::vector<at::Tensor> outs = root_list(outputs, in, getRank(), getSize(), root, "gather", "output");
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
  const std::vector<at::Tensor> ins = root_list(inputs, out, getRank(), getSize(), root, "scatter", "input");
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
