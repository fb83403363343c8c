// torch.distributed._symmetric_memory on CPU over Tessera's symmetric heap (symm_mem.h).
#include "symm_mem.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/util/Exception.h>
#include <shmem.h>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/symm_mem/SymmetricMemory.hpp>
#include <torch/library.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "symmetric.h"

namespace tessera_torch {
namespace {

namespace sm = c10d::symmetric_memory;

constexpr size_t kPadAlign = 256;  // keeps the buffer after the pad as aligned as the pool's blocks

// One allocation: [signal pad | buffer] in a block of the pool.
struct Block {
  at::Tensor bytes;  // owns the block; handles hold copies, so the block outlives free() while they live
  size_t pad_bytes = 0;
  size_t buffer_bytes = 0;
  std::map<std::string, c10::intrusive_ptr<sm::SymmetricMemory>> handles;  // by group name
  char* pad() const { return static_cast<char*>(bytes.data_ptr()); }
  char* buffer() const { return pad() + pad_bytes; }
};

// What each rank publishes at rendezvous.
struct Published {
  uint64_t offset;  // of its block from the pool's start
  uint64_t pad_bytes;
  uint64_t buffer_bytes;
  int64_t pe;
};

struct GroupView {
  int rank;
  int size;
  c10::intrusive_ptr<c10d::Store> store;
};

GroupView group_view(const std::string& name) {
  try {
    const sm::GroupInfo& g = sm::get_group_info(name);
    return {g.rank, g.world_size, g.store};
  } catch (const c10::Error&) {
    // not set by set_group_info: the process group of that name (throws naming it when there is none)
  }
  auto pg = c10d::resolve_process_group(name);
  return {pg->getRank(), pg->getSize(), pg->getStore()};
}

class SymmMemTessera final : public sm::SymmetricMemory {
 public:
  SymmMemTessera(at::Tensor keep, std::vector<char*> sym_blocks, std::vector<int> pes, size_t pad_bytes,
                 size_t buffer_bytes, int rank, std::string group)
      : keep_(std::move(keep)), sym_blocks_(std::move(sym_blocks)), pes_(std::move(pes)), pad_bytes_(pad_bytes),
        buffer_bytes_(buffer_bytes), rank_(rank), world_(static_cast<int>(pes_.size())), group_(std::move(group)) {
    for (int r = 0; r < world_; ++r) {
      auto* pad = static_cast<char*>(shmem_ptr(sym_blocks_[r], pes_[r]));
      pads_.push_back(pad);
      buffers_.push_back(pad ? pad + pad_bytes_ : nullptr);
      direct_ = direct_ && pad;
    }
  }

  std::vector<void*> get_buffer_ptrs() override { return buffers_; }
  std::vector<void*> get_signal_pad_ptrs() override { return pads_; }
  // CPU: the "device" arrays are these host arrays.
  void** get_buffer_ptrs_dev() override { return buffers_.data(); }
  void** get_signal_pad_ptrs_dev() override { return pads_.data(); }
  size_t get_buffer_size() override { return buffer_bytes_; }
  size_t get_offset() override { return 0; }
  bool has_multicast_support() override { return false; }
  void* get_multicast_ptr() override { return nullptr; }
  int get_rank() override { return rank_; }
  int get_world_size() override { return world_; }
  c10::Device get_device() override { return c10::Device(c10::DeviceType::CPU); }
  const std::vector<int>& get_rank_to_global_rank() override { return pes_; }  // global rank r is PE r
  int* get_rank_to_global_rank_dev() override { return pes_.data(); }
  bool world_within_direct_access() override { return direct_; }

  void put_signal(int dst_rank, int channel, size_t /*timeout_ms: a put never waits*/) override {
    check_peer(dst_rank, "put_signal");
    check_channel(channel, "put_signal");
    shmem_quiet();
    signal(dst_rank, channel);
  }

  void wait_signal(int src_rank, int channel, size_t timeout_ms) override {
    check_peer(src_rank, "wait_signal");
    check_channel(channel, "wait_signal");
    consume(src_rank, channel, timeout_ms, "wait_signal");
  }

  void barrier(int channel, size_t timeout_ms) override {
    check_channel(channel, "barrier");
    shmem_quiet();
    // step 0: tell every peer this rank has arrived
    for (int k = 1; k < world_; ++k) signal((rank_ + k) % world_, channel);
    // step 1: wait until every peer has told this rank the same
    for (int k = 1; k < world_; ++k) consume((rank_ + world_ - k) % world_, channel, timeout_ms, "barrier");
  }

 private:
  uint64_t* slot(int dst, int channel, int src) const {
    return reinterpret_cast<uint64_t*>(sym_blocks_[dst]) + static_cast<size_t>(channel) * world_ + src;
  }
  void signal(int dst, int channel) { shmem_uint64_atomic_add(slot(dst, channel, rank_), 1, pes_[dst]); }

  void consume(int src, int channel, size_t timeout_ms, const char* call) {
    uint64_t* s = slot(rank_, channel, src);
    if (timeout_ms == 0) {
      shmem_uint64_wait_until(s, SHMEM_CMP_GE, 1);
    } else {
      const auto start = std::chrono::steady_clock::now();
      const auto deadline = start + std::chrono::milliseconds(timeout_ms);
      for (int polls = 0; !shmem_uint64_test(s, SHMEM_CMP_GE, 1); ++polls) {
        const auto now = std::chrono::steady_clock::now();
        TORCH_CHECK(now < deadline, "tessera symm_mem: ", call, ": rank ", rank_, " (PE ", pes_[rank_],
                    ") of group '", group_, "' got no signal from rank ", src, " (PE ", pes_[src], ") on channel ",
                    channel, " within ", timeout_ms, " ms");
        // Ranks often share CPUs: give the peer the CPU, then stop burning it.
        if (polls < 1000) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    shmem_uint64_atomic_add(s, ~uint64_t{0}, pes_[rank_]);  // take the signal back: the pad returns to zero
  }

  void check_peer(int r, const char* call) const {
    TORCH_CHECK(r >= 0 && r < world_ && r != rank_, "tessera symm_mem: ", call, ": peer rank ", r,
                " is not another rank of group '", group_, "' (", world_, " ranks, this is rank ", rank_, ")");
  }
  void check_channel(int channel, const char* call) const {
    const size_t channels = pad_bytes_ / sizeof(uint64_t) / world_;
    TORCH_CHECK(channel >= 0 && static_cast<size_t>(channel) < channels, "tessera symm_mem: ", call, ": channel ",
                channel, " is out of range: a signal pad of ", pad_bytes_, " bytes holds channels 0-",
                channels - 1, " at ", world_, " ranks (set_signal_pad_size before allocating)");
  }

  at::Tensor keep_;
  std::vector<char*> sym_blocks_;  // rank r's block as a symmetric address of this PE
  std::vector<int> pes_;
  std::vector<void*> pads_, buffers_;
  size_t pad_bytes_, buffer_bytes_;
  int rank_, world_;
  std::string group_;
  bool direct_ = true;
};

class AllocatorTessera final : public sm::SymmetricMemoryAllocator {
 public:
  void* alloc(size_t size, int /*device_idx*/, const std::optional<std::string>& group_name) override {
    auto b = std::make_shared<Block>();
    b->pad_bytes = (sm::get_signal_pad_size() + kPadAlign - 1) / kPadAlign * kPadAlign;
    b->buffer_bytes = size;
    b->bytes = symmetric_empty({static_cast<int64_t>(b->pad_bytes + size)}, at::kByte);
    std::memset(b->pad(), 0, b->pad_bytes);  // before rendezvous publishes it, so no peer signals yet
    char* p = b->buffer();
    std::lock_guard lk(mu_);
    blocks_[p] = std::move(b);
    if (group_name) default_group_[p] = *group_name;
    return p;
  }

  void free(void* ptr) override {
    std::lock_guard lk(mu_);
    blocks_.erase(static_cast<char*>(ptr));
    default_group_.erase(static_cast<char*>(ptr));
  }

  size_t get_alloc_size(void* ptr) override { return find(ptr, "get_alloc_size")->buffer_bytes; }

  c10::intrusive_ptr<sm::SymmetricMemory> rendezvous(void* ptr, const std::optional<std::string>& group_name) override {
    std::shared_ptr<Block> b = find(ptr, "rendezvous");
    std::string group;
    {
      std::lock_guard lk(mu_);
      auto d = default_group_.find(static_cast<char*>(ptr));
      TORCH_CHECK(group_name || d != default_group_.end(),
                  "tessera symm_mem: rendezvous: no group named (neither here nor at allocation)");
      group = group_name ? *group_name : d->second;
      if (auto h = b->handles.find(group); h != b->handles.end()) return h->second;
    }
    const GroupView g = group_view(group);
    TORCH_CHECK(g.store, "tessera symm_mem: rendezvous: group '", group, "' has no store");
    char* base = pool_base();
    const Published mine{static_cast<uint64_t>(b->pad() - base), b->pad_bytes, b->buffer_bytes, shmem_my_pe()};
    const std::string prefix = "tessera/symm_mem/" + group + "/" + std::to_string(next_seq(group)) + "/";
    const auto* raw = reinterpret_cast<const uint8_t*>(&mine);
    g.store->set(prefix + std::to_string(g.rank), std::vector<uint8_t>(raw, raw + sizeof mine));
    std::vector<char*> sym_blocks(g.size);
    std::vector<int> pes(g.size);
    for (int r = 0; r < g.size; ++r) {
      Published p = mine;
      if (r != g.rank) {
        const std::vector<uint8_t> v = g.store->get(prefix + std::to_string(r));  // waits for rank r
        TORCH_CHECK(v.size() == sizeof p, "tessera symm_mem: rendezvous: rank ", r, " published ", v.size(),
                    " bytes, not ", sizeof p, " (another version of tessera_torch?)");
        std::memcpy(&p, v.data(), sizeof p);
      }
      TORCH_CHECK(p.buffer_bytes == mine.buffer_bytes && p.pad_bytes == mine.pad_bytes,
                  "tessera symm_mem: rendezvous in group '", group, "': rank ", r, " allocated ", p.buffer_bytes,
                  " bytes with a signal pad of ", p.pad_bytes, ", rank ", g.rank, " ", mine.buffer_bytes,
                  " with ", mine.pad_bytes, "; every rank must allocate the same size");
      sym_blocks[r] = base + p.offset;
      pes[r] = static_cast<int>(p.pe);
    }
    auto h = c10::make_intrusive<SymmMemTessera>(b->bytes, std::move(sym_blocks), std::move(pes), b->pad_bytes,
                                                 b->buffer_bytes, g.rank, group);
    std::lock_guard lk(mu_);
    return b->handles.emplace(group, h).first->second;
  }

  bool has_multicast_support(int /*device_idx*/) override { return false; }
  c10::DeviceType supported_device_type() override { return c10::DeviceType::CPU; }
  std::string name() override { return "TESSERA"; }
  bool has_allocation(void* ptr) override {
    std::lock_guard lk(mu_);
    return blocks_.count(static_cast<char*>(ptr)) != 0;
  }

 private:
  std::shared_ptr<Block> find(void* ptr, const char* call) {
    std::lock_guard lk(mu_);
    auto it = blocks_.find(static_cast<char*>(ptr));
    TORCH_CHECK(it != blocks_.end(), "tessera symm_mem: ", call, ": ", ptr,
                " is not the start of a tensor made by torch.distributed._symmetric_memory.empty(device='cpu')");
    return it->second;
  }
  // Rendezvous of one group run in the same order on all its ranks (they are collective), so this count
  // names the same rendezvous everywhere.
  int64_t next_seq(const std::string& group) {
    std::lock_guard lk(mu_);
    return seq_[group]++;
  }

  std::mutex mu_;
  std::map<char*, std::shared_ptr<Block>> blocks_;  // by buffer address
  std::map<char*, std::string> default_group_;
  std::map<std::string, int64_t> seq_;
};

// ---- kernels ----

// out[i] = op over ranks of in[r][i], for i in [begin, end), summed in rank order (so every rank gets the
// same bits) in float for the 16-bit types. out may be one of the inputs: each chunk is read in full first.
template <typename T>
void reduce_range(T* out, const std::vector<const T*>& in, int64_t begin, int64_t end, bool avg) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr int64_t kChunk = 1024;
  Acc acc[kChunk];
  const Acc n = static_cast<Acc>(in.size());
  for (int64_t c = begin; c < end; c += kChunk) {
    const int64_t m = std::min(kChunk, end - c);
    for (int64_t j = 0; j < m; ++j) acc[j] = static_cast<Acc>(in[0][c + j]);
    for (size_t r = 1; r < in.size(); ++r)
      for (int64_t j = 0; j < m; ++j) acc[j] += static_cast<Acc>(in[r][c + j]);
    if (avg)
      for (int64_t j = 0; j < m; ++j) acc[j] /= n;
    for (int64_t j = 0; j < m; ++j) out[c + j] = static_cast<T>(acc[j]);
  }
}

struct Peers {
  c10::intrusive_ptr<sm::SymmetricMemory> h;
  std::vector<char*> at;  // the input's first byte in every rank's buffer, in this process
  bool avg;
  template <typename T>
  std::vector<const T*> as() const {
    std::vector<const T*> v;
    for (char* q : at) v.push_back(reinterpret_cast<const T*>(q));
    return v;
  }
};

// Checks what both kernels need and finds the input in every rank's buffer.
Peers peers_of(const at::Tensor& input, const std::string& reduce_op, const std::string& group, const char* call) {
  TORCH_CHECK(reduce_op == "sum" || reduce_op == "avg", "symm_mem::", call, " (tessera): reduce_op '", reduce_op,
              "' is not supported; use 'sum' or 'avg'");
  TORCH_CHECK(input.is_contiguous(), "symm_mem::", call, " (tessera): the input must be contiguous");
  const auto st = input.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble || st == at::kBFloat16 || st == at::kHalf, "symm_mem::", call,
              " (tessera): ", st, " is not supported; use float32, float64, bfloat16 or float16");
  TORCH_CHECK(sm::is_symm_mem_tensor(input), "symm_mem::", call,
              " (tessera): the input is not in symmetric memory; allocate it with "
              "torch.distributed._symmetric_memory.empty(..., device='cpu')");
  Peers p{sm::rendezvous(input, group), {}, reduce_op == "avg"};  // cached after the first call
  const std::vector<void*> bufs = p.h->get_buffer_ptrs();
  const int rank = p.h->get_rank();
  for (size_t r = 0; r < bufs.size(); ++r)
    TORCH_CHECK(bufs[r], "symm_mem::", call, " (tessera): rank ", rank, " of group '", group, "' cannot load from rank ",
                r, ", a PE of another host; this kernel reads every rank's buffer directly and needs the whole group "
                "on one host (put_signal, wait_signal and barrier work across hosts)");
  // The storage starts at the buffer (is_symm_mem_tensor); data_ptr() would be null for an empty input.
  const size_t offset = input.storage_offset() * input.element_size();
  TORCH_CHECK(offset + input.nbytes() <= p.h->get_buffer_size(), "symm_mem::", call, " (tessera): the input ends ",
              offset + input.nbytes(), " bytes into a symmetric buffer of ", p.h->get_buffer_size());
  for (void* b : bufs) p.at.push_back(static_cast<char*>(b) + offset);
  return p;
}

at::Tensor one_shot_all_reduce(const at::Tensor& input, std::string reduce_op, std::string group_name) {
  Peers p = peers_of(input, reduce_op, group_name, "one_shot_all_reduce");
  at::Tensor out = at::empty_like(input, at::MemoryFormat::Contiguous);
  // step 0: every rank's input is in place
  p.h->barrier(0, 0);
  // every rank reduces all inputs, read where they lie
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "one_shot_all_reduce", [&] {
    reduce_range(out.data_ptr<scalar_t>(), p.as<scalar_t>(), 0, input.numel(), p.avg);
  });
  // step 1: no rank reads another's input any more, so each may change its own
  p.h->barrier(0, 0);
  return out;
}

at::Tensor two_shot_all_reduce_(at::Tensor input, std::string reduce_op, std::string group_name) {
  Peers p = peers_of(input, reduce_op, group_name, "two_shot_all_reduce_");
  const int n = p.h->get_world_size(), rank = p.h->get_rank();
  const int64_t numel = input.numel(), slice = (numel + n - 1) / n;
  auto lo = [&](int r) { return std::min<int64_t>(r * slice, numel); };
  auto hi = [&](int r) { return std::min<int64_t>((r + 1) * slice, numel); };
  // step 0: every rank's input is in place
  p.h->barrier(0, 0);
  // step 1: rank r reduces slice r from every rank's buffer into its own (nobody else touches slice r here)
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "two_shot_all_reduce_", [&] {
    reduce_range(reinterpret_cast<scalar_t*>(p.at[rank]), p.as<scalar_t>(), lo(rank), hi(rank), p.avg);
  });
  // step 2: every slice is reduced where it belongs
  p.h->barrier(0, 0);
  // step 3: gather the other slices from their owners
  const size_t es = input.element_size();
  for (int k = 1; k < n; ++k) {
    const int r = (rank + k) % n;
    std::memcpy(p.at[rank] + lo(r) * es, p.at[r] + lo(r) * es, (hi(r) - lo(r)) * es);
  }
  // step 4: no rank reads another's buffer any more
  p.h->barrier(0, 0);
  return input;
}

}  // namespace

void register_symm_mem() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto a = c10::make_intrusive<AllocatorTessera>();
    sm::register_availability(a->name(), a);  // set_backend("TESSERA")
    sm::register_allocator(c10::DeviceType::CPU, a);
  });
}

}  // namespace tessera_torch

TORCH_LIBRARY_IMPL(symm_mem, CPU, m) {
  m.impl("one_shot_all_reduce", tessera_torch::one_shot_all_reduce);
  m.impl("two_shot_all_reduce_", tessera_torch::two_shot_all_reduce_);
}
