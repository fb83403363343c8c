// Tessera SPMD kernels and reduction operators: the multi-core half of the stack.
//
// A kernel is a function run by `block_num` blocks (worker threads of this PE, the "AI Cores"), each knowing
// its block_idx(). Blocks share a global workspace, each owns a scratch buffer sized to stay in L2, and all
// meet at a grid-wide sync(). The operators below (ReduceSum/Mean/Max/Min/Prod, Softmax, LayerNorm,
// RMSNorm, BatchNorm) are kernels with the two-phase pattern: each block reduces its slice, then partials are
// combined across blocks, flat or as a tree.
//
//   tessera::kernel::launch({.block_num = 4}, [&](tessera::kernel::BlockContext& b) {
//     partial[b.block_idx()] = sum(slice(b.block_idx()));
//     b.sync();                                   // every block's partial is now visible to every block
//     if (b.block_idx() == 0) total = combine(partial);
//   });
//
// Contracts
// - launch() returns when every block has returned. Stores made by any block before it returns are visible
//   to the caller afterwards; stores made before sync() are visible to every block after it.
// - Block 0 runs on the calling thread; blocks 1..n-1 on a persistent pool of threads, pinned to the CPUs of
//   this process (TESSERA_KERNEL_PIN). More blocks than CPUs is allowed (waits then yield instead of spin),
//   and then a block not yet started runs on whichever thread of the launch is free first, the caller
//   included: a block must not assume the thread it runs on (only one block runs on a thread at a time).
// - launch() is thread-safe (launches from different threads run one after the other). A kernel must not
//   launch another kernel, and every block must call sync() the same number of times. A sync() that cannot
//   complete ends the job after TESSERA_TIMEOUT seconds, naming the kernel and the blocks that are missing.
// - A kernel must not throw: an escaping exception ends the job with its message.
// - Blocks may call the OpenSHMEM API (shmem.h): puts, signals and waits from inside a kernel are how
//   communication is fused with compute (kernel-initiated communication).
// - Operators: contiguous row-major tensors of f32, f16 or bf16; arithmetic in f32, accumulations in f64
//   blocks (see docs/kernel.md for accuracy). Results are identical run to run for a fixed block_num.
//   Bad arguments throw tessera::kernel::Error naming the value and the limit.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <tessera/error.hpp>
#include <tessera/version.h>
#include <tessera/dtypes.h>
#include <tessera/stream.hpp>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tessera::kernel {

/// Thrown by the C++ API on bad arguments (null data, shape mismatch, axis out of range, zero blocks).
using Error = tessera::Error;  // one exception type for the whole C++ API (error.hpp)

// ---------------------------------------------------------------------------------------------------------
// Runtime
inline constexpr int kAutoBlocks = -1;  // TESSERA_KERNEL_BLOCKS, else the number of usable CPUs

/// How partial results of the blocks are combined: kFlat (one pass over all partials after one sync),
/// kTree (log2(block_num) rounds, pairs combined in parallel), kAuto (flat up to 8 blocks, then tree;
/// TESSERA_KERNEL_COMBINE overrides).
enum class Combine : uint8_t { kAuto, kFlat, kTree };

struct LaunchOptions {
  int block_num = kAutoBlocks;
  size_t workspace_bytes = 0;  // global workspace shared by the blocks; contents undefined at launch
  const char* name = "kernel"; // used in error and timeout messages
};

namespace detail {
struct Grid;
}

/// What a block knows about itself and its launch. Valid only inside the kernel call that received it.
class BlockContext {
 public:
  int block_idx() const noexcept { return idx_; }
  int block_num() const noexcept { return num_; }
  /// Grid-wide barrier: returns when every block of the launch has called it (acquire/release: stores
  /// before the call are visible to every block after it).
  void sync();
  /// This block's scratch (64-byte aligned, sized to stay in L2: TESSERA_KERNEL_SCRATCH); private to it.
  void* scratch() const noexcept { return scratch_; }
  size_t scratch_bytes() const noexcept { return scratch_bytes_; }
  /// The launch's global workspace (64-byte aligned), shared by all blocks.
  void* workspace() const noexcept { return workspace_; }
  size_t workspace_bytes() const noexcept { return workspace_bytes_; }
  template <typename T>
  T* workspace_as() const noexcept { return static_cast<T*>(workspace_); }
  template <typename T>
  T* scratch_as() const noexcept { return static_cast<T*>(scratch_); }
  const char* kernel_name() const noexcept { return name_; }

 private:
  friend struct detail::Grid;
  int idx_ = 0;
  int num_ = 1;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  const char* name_ = "";
  detail::Grid* grid_ = nullptr;
};

using KernelFn = void (*)(BlockContext&, void* arg);

/// Runs fn(ctx, arg) on every block; throws Error on bad options.
void launch_raw(const LaunchOptions& opts, KernelFn fn, void* arg);

template <typename F>
void launch(const LaunchOptions& opts, F&& f) {
  using Fn = std::remove_reference_t<F>;
  launch_raw(opts, [](BlockContext& c, void* a) { (*static_cast<Fn*>(a))(c); },
             const_cast<void*>(static_cast<const void*>(&f)));
}

/// The kernel enqueued on a stream (a compute stream, tessera/stream.hpp) instead of run now: it runs after
/// the stream's earlier items, with block 0 on the stream's thread, and the call returns at once. `f` is
/// moved into the item (its captures must outlive the run, as a stream's buffers must); opts.name is copied.
/// Bad options fail the item: the stream's error is then sticky (Stream::synchronize throws). A kernel that
/// throws ends the job, as on the calling thread.
/// Events order it against collectives on comm streams in either direction:
///   compute.enqueue ... ; ready.record(compute); comm_stream.wait(ready); comm.allreduce(..., comm_stream);
template <typename F>
void launch(Stream& s, const LaunchOptions& opts, F f) {
  auto fn = std::make_shared<F>(std::move(f));
  auto name = std::make_shared<std::string>(opts.name ? opts.name : "kernel");
  s.enqueue(*name, [opts, fn, name] {
    LaunchOptions o = opts;
    o.name = name->c_str();
    launch(o, *fn);
  });
}

/// The block the calling thread is running, or nullptr outside a kernel.
BlockContext* current_block() noexcept;
/// Block count used for kAutoBlocks.
int default_block_num();

// ---------------------------------------------------------------------------------------------------------
// Tensors
// The kernels' element types, each an entry of the library's one list (tessera/dtypes.h): X(enumerator, entry).
#define TESSERA_KERNEL_DTYPES(X) X(kF32, kFloat32) X(kF16, kFloat16) X(kBF16, kBFloat16)
/// Element types of tensors: kF32, kF16, kBF16 (values 0, 1, 2), the entries float32, float16 and bfloat16 of
/// the one list (tessera/dtypes.h), whose names and sizes they take.
enum class DType : uint8_t { TESSERA_KERNEL_DTYPES(TESSERA_LIST_ENUMERATOR) };
size_t dtype_size(DType t);       // bytes per element; 0 for a value outside the enum
const char* dtype_name(DType t);  // the list's abbreviation: "f32", "f16", "bf16"; "?" outside the enum

inline constexpr int kMaxRank = 8;
struct Shape {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  Shape() = default;
  Shape(std::initializer_list<int64_t> d) {
    if (d.size() > static_cast<size_t>(kMaxRank)) throw Error("Shape: rank above 8");
    for (int64_t v : d) dims[rank++] = v;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  int64_t operator[](int i) const { return dims[i]; }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
};
std::string to_string(const Shape& s);

/// Contiguous row-major tensors. The caller owns the memory.
struct ConstTensor {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;
};
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;
  operator ConstTensor() const { return {data, dtype, shape}; }  // NOLINT: implicit by design
};

/// Scalar conversions (round to nearest even; NaN stays NaN).
float bf16_to_f32(uint16_t h) noexcept;
uint16_t f32_to_bf16(float f) noexcept;
float f16_to_f32(uint16_t h) noexcept;
uint16_t f32_to_f16(float f) noexcept;

// ---------------------------------------------------------------------------------------------------------
/// Operators. x and y must not overlap unless stated. Every call is a kernel launch: blocking, or, with
/// `stream` set, enqueued on that stream as launch(stream, ...) is (the call returns at once; its argument
/// errors then fail the stream's item, and the tensors must outlive the run).
struct OpOptions {
  int block_num = kAutoBlocks;
  Combine combine = Combine::kAuto;
  Stream* stream = nullptr;
};

// The kernels' reduction operators, each an entry of the one list (tessera/dtypes.h): X(enumerator, entry).
#define TESSERA_KERNEL_REDUCE_OPS(X) X(kSum, kSum) X(kMean, kAvg) X(kMax, kMax) X(kMin, kMin) X(kProd, kProd)
/// Reduction operators: kSum, kMean, kMax, kMin, kProd (values 0..4), entries of the one list
/// (tessera/dtypes.h); kMean is the list's avg.
enum class ReduceOp : uint8_t { TESSERA_KERNEL_REDUCE_OPS(TESSERA_LIST_ENUMERATOR) };
inline constexpr int kAllAxes = INT_MIN;
const char* reduce_op_name(ReduceOp op);  // the list's tensor name: "sum", "mean", "max", "min", "prod"

/// y = op over `axis` of x (negative counts from the end; kAllAxes: every element, y has one element).
/// y's shape is x's without `axis`, or with it set to 1 (keepdims); y.dtype == x.dtype.
/// Empty reductions: sum 0, prod 1, mean NaN; max/min of an empty axis is an error. Max/min propagate NaN.
void reduce(ReduceOp op, ConstTensor x, Tensor y, int axis = kAllAxes, const OpOptions& opts = {});

/// Softmax / LogSoftmax along the last axis (max-subtracted, so stable for any finite input). y may equal x.
void softmax(ConstTensor x, Tensor y, const OpOptions& opts = {});
void log_softmax(ConstTensor x, Tensor y, const OpOptions& opts = {});

/// LayerNorm / RMSNorm over the last axis: y = (x - mean) / sqrt(var + eps) * weight + bias (LayerNorm, var
/// biased) or y = x / sqrt(mean(x^2) + eps) * weight + bias (RMSNorm). weight/bias: shape [last dim], dtype
/// f32 or x.dtype; absent means 1 / 0. y may equal x.
struct NormParams {
  std::optional<ConstTensor> weight;
  std::optional<ConstTensor> bias;
  float eps = 1e-5f;
};
void layer_norm(ConstTensor x, Tensor y, const NormParams& p = {}, const OpOptions& opts = {});
void rms_norm(ConstTensor x, Tensor y, const NormParams& p = {}, const OpOptions& opts = {});

/// BatchNorm over x of shape [N, C, ...] (channel axis 1): per-channel statistics over N and the spatial
/// axes. Channel vectors are f32 arrays of C elements (null: absent).
struct BatchNormParams {
  const float* weight = nullptr;
  const float* bias = nullptr;
  float eps = 1e-5f;
  float momentum = 0.1f;          // training: running = (1 - momentum) * running + momentum * batch
  float* running_mean = nullptr;  // training: updated if set; inference: required
  float* running_var = nullptr;   // training: updated with the unbiased variance if set; inference: required
};
/// Per-channel mean and biased variance (either output may be null).
void batch_norm_stats(ConstTensor x, float* mean, float* var, const OpOptions& opts = {});
/// Training: normalises with the batch statistics, writes them to save_mean/save_var (biased; may be null)
/// and updates the running statistics. y may equal x.
void batch_norm_train(ConstTensor x, Tensor y, const BatchNormParams& p, float* save_mean = nullptr,
                      float* save_var = nullptr, const OpOptions& opts = {});
/// Inference: normalises with p.running_mean / p.running_var.
void batch_norm_infer(ConstTensor x, Tensor y, const BatchNormParams& p, const OpOptions& opts = {});

// ---------------------------------------------------------------------------------------------------------
/// Kernel-initiated communication (needs an initialised OpenSHMEM job: shmem_init or tessera::init).

/// Block-cooperative put: called by every block of a kernel with the same arguments; block b copies its
/// share (contiguous, 64-byte aligned cuts) of [src, src + bytes) to the symmetric `dest` on PE `pe`
/// (shmem_putmem_signal), adding the size of its share to the symmetric signal `sig` on `pe`
/// (SHMEM_SIGNAL_ADD). The target knows the whole transfer has arrived when `sig` has grown by `bytes`
/// (shmem_signal_wait_until(sig, SHMEM_CMP_GE, old + bytes)), whatever block count the sender used.
/// sig may be null: then completion is by shmem_quiet() in each block (before it returns from the call).
void coop_put(BlockContext& b, void* dest, const void* src, size_t bytes, uint64_t* sig, int pe);

/// Softmax / LogSoftmax over a last dimension sharded across the PEs of the job (the vocabulary-parallel
/// pattern): PE p holds columns [c_p, c_p + n_p) of every row, x = [rows, n_p] (n_p may differ between PEs and
/// may be 0). In one kernel launch per PE, blocks compute their rows' local max, put it to every PE's
/// exchange buffer with put-with-signal, wait for the peers' partials, and do the same for the sum of
/// exponentials: no collective call. Every PE gets bit-identical row statistics (partials are combined in PE
/// order). lse (optional, f32 [rows]) receives the log-sum-exp of each full row.
/// Collective: every PE creates the object with the same max_rows and calls run() with the same rows, in the
/// same order. The destructor frees the symmetric buffers (collective, shmem_free). With opts.stream set, a
/// call is an item of that stream, as the other operators' are; the calls on one object must still be
/// ordered (all on one stream, or the stream synchronized before a blocking call or one on another stream).
class ShardedSoftmax {
 public:
  explicit ShardedSoftmax(int64_t max_rows);
  ~ShardedSoftmax();
  ShardedSoftmax(const ShardedSoftmax&) = delete;
  ShardedSoftmax& operator=(const ShardedSoftmax&) = delete;

  void softmax(ConstTensor x, Tensor y, float* lse = nullptr, const OpOptions& opts = {});
  void log_softmax(ConstTensor x, Tensor y, float* lse = nullptr, const OpOptions& opts = {});
  int64_t max_rows() const { return max_rows_; }

 private:
  void run(ConstTensor x, Tensor y, float* lse, bool log, const OpOptions& opts);
  int64_t max_rows_ = 0;
  int n_pes_ = 1;
  int my_pe_ = 0;
  uint64_t received_ = 0;       // rows received per signal so far (sum of rows * n_pes over calls; same on every PE)
  float* part_max_ = nullptr;   // symmetric [n_pes][max_rows]: slot p holds PE p's partial max per row
  double* part_sum_ = nullptr;  // symmetric [n_pes][max_rows]
  uint64_t* sig_ = nullptr;     // symmetric [2]: rows received (max, sum), cumulative over calls
};

}  // namespace tessera::kernel
