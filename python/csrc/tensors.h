// Tensors as Tessera's calls take them: the checks every operation makes on its tensors, torch's types and
// reduce operators in Tessera's terms, and the views that let a list of tensors travel as one buffer.
// Each check throws a c10::Error that begins "tessera: CALL:" and names the value and the limit.
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <tessera/coll.hpp>

namespace tessera_torch {

namespace tc = tessera::coll;

// A dense CPU tensor, else an error.
void check_cpu(const at::Tensor& t, const char* call);
// The one CPU tensor of a single-tensor call.
const at::Tensor& single(const std::vector<at::Tensor>& v, const char* call);
// Every tensor of `list` has like's size and type (and is on the CPU); `what` names the list.
void check_same(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* call, const char* what);
// A coalesced call's lists: one output per input, one type, and the whole side (outputs when
// outputs_are_whole: an all-gather; else the inputs: a reduce-scatter) n times the other, tensor by tensor.
void check_coalesced(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs, int n,
                     bool outputs_are_whole, const char* call);

tc::DataType data_type_of(const at::Tensor& t, const char* call);
// Bool tensors travel as bytes: SUM and MAX become OR, PRODUCT and MIN AND. PREMUL_SUM is SUM of scaled()
// inputs.
tc::RedOp red_op_of(const c10d::ReduceOp& op, const at::Tensor& t, const char* call);
// PREMUL_SUM's factor (a number or a one-element tensor), or none for every other operator.
std::optional<at::Tensor> premul_factor(const c10d::ReduceOp& op);
// The input a reduction reads: the tensor itself, or for PREMUL_SUM a scaled copy (the caller's tensor is not
// an output of the call, so it must not change).
at::Tensor scaled(const at::Tensor& in, const std::optional<at::Tensor>& factor);

// A contiguous tensor to work on: the tensor itself, or a copy whose result copy_back() returns.
at::Tensor dense(const at::Tensor& t);
void copy_back(const at::Tensor& user, const at::Tensor& work);
size_t bytes_of(const at::Tensor& t);
int64_t total_numel(const std::vector<at::Tensor>& v);
// The start of the tensors' elements when they lie end to end in memory in list order (views of one buffer,
// as `list(flat.chunk(n))` makes them): the call can use them in place. Null otherwise.
void* adjacent(const std::vector<at::Tensor>& v);
// Copies `flat`'s elements out into the list in order, unless the call wrote them in place (flat starts
// where the list does).
void unpack(const at::Tensor& flat, const std::vector<at::Tensor>& v);

}  // namespace tessera_torch
