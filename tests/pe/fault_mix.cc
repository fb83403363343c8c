// The victim of tests/scripts/fault_injection_test.sh: loops through one phase of work (or a seeded mix of all
// of them) until it is killed, so that the script can kill a PE at a random moment of that work.
//
//   pe_fault_mix <dir> <phase> [seed] [iterations]
//   pe_fault_mix --phases          prints the phase names (the script's list), without starting a PE
//
// Phases: put (blocking, nbi + quiet, put-with-signal; small and large), barrier, allreduce, allgather,
// alltoall, broadcast, reduce_scatter, reduce (each at counts from a few elements to MiBs, so that the cost
// model picks different algorithms; TESSERA_ALGO forces one), collectives (all of those in turn), kernel (SPMD
// kernel launches whose blocks put to the next PE and wait for the previous one inside the kernel), stream
// (collectives enqueued on a comm stream, events queried while the caller computes), compute (long stretches
// outside the library between barriers: the survivors are not waiting when the job ends, and the launcher's
// SIGTERM must end them), mix (a phase per iteration, the same sequence on every PE from the seed).
//
// Once every PE has run one iteration, PE p writes its pid to <dir>/pe<p> and PE 0 the job id to <dir>/job
// (each by rename, so a reader never sees half a file): the script kills one of those pids. Without
// iterations the loop never ends; with them the program finalizes and exits 0 (the fault-free check).
// Every result is checked; a wrong one prints "fault_mix: PE <p>: ..." and aborts.
#include <shmem.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tessera/coll.hpp"
#include "tessera/kernel.hpp"

namespace tc = tessera::coll;
namespace tk = tessera::kernel;

namespace {

enum class Phase { kPut, kBarrier, kAllreduce, kAllgather, kAlltoall, kBroadcast, kReduceScatter, kReduce,
                   kCollectives, kKernel, kStream, kCompute, kMix };
constexpr const char* kPhaseNames[] = {"put",       "barrier",        "allreduce", "allgather",   "alltoall",
                                       "broadcast", "reduce_scatter", "reduce",    "collectives", "kernel",
                                       "stream",    "compute",        "mix"};
constexpr int kPhases = sizeof kPhaseNames / sizeof kPhaseNames[0];
static_assert(kPhases == static_cast<int>(Phase::kMix) + 1, "a name for every phase, in enum order");

constexpr size_t kBig = size_t{1} << 20;  // bytes of the large puts and of a kernel's cooperative put
// Element counts per rank: the LL protocol's range, small, staged, and large enough for ring/pipelined paths.
constexpr size_t kCounts[] = {1, 61, 4096, size_t{1} << 18};
constexpr size_t kMaxCount = size_t{1} << 18;

[[noreturn]] void wrong(const char* what, size_t at, double got, double want) {
  std::fprintf(stderr, "fault_mix: PE %d: %s wrong at element %zu: %g, expected %g\n", shmem_my_pe(), what, at, got,
               want);
  std::fflush(stderr);
  std::abort();
}

template <typename Want>
void expect_each(const char* what, const float* v, size_t n, Want want) {
  for (size_t i = 0; i < n; ++i)
    if (v[i] != want(i)) wrong(what, i, v[i], want(i));
}

void expect_all(const char* what, const float* v, size_t n, float want) {
  expect_each(what, v, n, [want](size_t) { return want; });
}

// Byte i of what PE `from` sends.
char pattern(size_t i, int from) { return static_cast<char>((i * 7 + static_cast<size_t>(from) * 13) & 0x7f); }

void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f || std::fputs(text.c_str(), f) < 0 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::perror(path.c_str());
    std::exit(2);
  }
}

class Work {
 public:
  Work() : me_(shmem_my_pe()), n_(shmem_n_pes()), to_((me_ + 1) % n_), from_((me_ + n_ - 1) % n_) {
    put_dst_ = static_cast<char*>(shmem_malloc(kBig));
    kernel_dst_ = static_cast<char*>(shmem_malloc(kBig));
    small_ = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
    put_sig_ = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
    kernel_sig_ = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
    src_.resize(kBig);
    for (size_t i = 0; i < kBig; ++i) src_[i] = pattern(i, me_);
    send_.resize(kMaxCount * static_cast<size_t>(n_));
    recv_.resize(kMaxCount * static_cast<size_t>(n_));
    stream_send_.resize(kMaxCount * static_cast<size_t>(n_));
    stream_recv_.resize(kMaxCount * static_cast<size_t>(n_));
    stream_small_.resize(kCounts[1]);
    comm_ = tc::Comm::world();
    stream_comm_ = tc::Comm::world();  // owned by the stream between synchronizations (coll.hpp)
    shmem_barrier_all();
  }

  void step(Phase p, long it) {
    switch (p) {
      case Phase::kPut: return puts(it);
      case Phase::kBarrier: return shmem_barrier_all();
      case Phase::kCollectives: return collective(static_cast<Phase>(static_cast<int>(Phase::kAllreduce) + it % 6), it);
      case Phase::kKernel: return kernel(it);
      case Phase::kStream: return stream(it);
      case Phase::kCompute: return compute();
      case Phase::kMix: return;  // resolved by the caller
      default: return collective(p, it);
    }
  }

 private:
  // Blocking small and large puts, a batch of nbi puts completed by quiet, then a put-with-signal whose
  // target waits for it: the put phase waits too, so PEs meet the job's end both inside a wait and outside.
  void puts(long it) {
    const uint64_t v = static_cast<uint64_t>(it);
    shmem_putmem(small_, &v, sizeof v, to_);
    shmem_putmem(put_dst_, src_.data(), kBig, to_);
    constexpr size_t kChunk = kBig / 16;
    for (size_t c = 0; c < kBig; c += kChunk) shmem_putmem_nbi(put_dst_ + c, src_.data() + c, kChunk, to_);
    shmem_quiet();
    shmem_putmem_signal(put_dst_, src_.data(), 64, put_sig_, 1, SHMEM_SIGNAL_ADD, to_);
    shmem_signal_wait_until(put_sig_, SHMEM_CMP_GE, ++put_rounds_);
    // The previous PE sends the same bytes every time, so a put of its next iteration landing meanwhile
    // leaves them unchanged.
    for (size_t i = 0; i < 64; ++i)
      if (put_dst_[i] != pattern(i, from_)) wrong("put", i, put_dst_[i], pattern(i, from_));
    if (put_rounds_ % 8 == 0) {
      shmem_barrier_all();
      for (size_t i = 0; i < kBig; i += 4093)
        if (put_dst_[i] != pattern(i, from_)) wrong("large put", i, put_dst_[i], pattern(i, from_));
    }
  }

  void collective(Phase p, long it) {
    const size_t count = kCounts[static_cast<size_t>(it) % 4];
    const size_t n = static_cast<size_t>(n_);
    const int root = static_cast<int>(it % n_);
    // Inputs that differ per rank, element and iteration, and a receive buffer poisoned before each call: a
    // call that is skipped (its output still the last iteration's), or that puts a block in the wrong place,
    // is seen. Small integers, so float sums are exact.
    auto in = [&](int q, size_t i) {
      return static_cast<float>(q + 1) + 16.0f * static_cast<float>((static_cast<size_t>(it) * 7 + i) % 11);
    };
    auto block = [](size_t q) { return 256.0f * static_cast<float>(q); };
    auto sum = [&](size_t i) {
      float t = 0;
      for (int q = 0; q < n_; ++q) t += in(q, i);
      return t;
    };
    float* s = send_.data();
    float* r = recv_.data();
    std::fill_n(r, count * n, -1.0f);
    switch (p) {
      case Phase::kAllreduce:
        for (size_t i = 0; i < count; ++i) s[i] = in(me_, i);
        comm_.allreduce(s, r, count, tc::DataType::kFloat32, tc::RedOp::kSum);
        return expect_each("allreduce", r, count, sum);
      case Phase::kAllgather:
        for (size_t i = 0; i < count; ++i) s[i] = in(me_, i);
        comm_.allgather(s, r, count, tc::DataType::kFloat32);
        for (size_t q = 0; q < n; ++q)
          expect_each("allgather", r + q * count, count, [&](size_t i) { return in(static_cast<int>(q), i); });
        return;
      case Phase::kAlltoall:  // block q of rank m's input: in(m, i) + 256 q; rank me receives in(q, i) + 256 me
        for (size_t q = 0; q < n; ++q)
          for (size_t i = 0; i < count; ++i) s[q * count + i] = in(me_, i) + block(q);
        comm_.alltoall(s, r, count, tc::DataType::kFloat32);
        for (size_t q = 0; q < n; ++q)
          expect_each("alltoall", r + q * count, count,
                      [&](size_t i) { return in(static_cast<int>(q), i) + block(static_cast<size_t>(me_)); });
        return;
      case Phase::kBroadcast:
        for (size_t i = 0; i < count; ++i) s[i] = in(me_, i);
        comm_.broadcast(s, r, count, tc::DataType::kFloat32, root);
        return expect_each("broadcast", r, count, [&](size_t i) { return in(root, i); });
      case Phase::kReduceScatter:
        for (size_t q = 0; q < n; ++q)
          for (size_t i = 0; i < count; ++i) s[q * count + i] = in(me_, i) + block(q);
        comm_.reduce_scatter(s, r, count, tc::DataType::kFloat32, tc::RedOp::kSum);
        return expect_each("reduce_scatter", r, count,
                           [&](size_t i) { return sum(i) + block(n) * static_cast<float>(me_); });
      case Phase::kReduce:
        for (size_t i = 0; i < count; ++i) s[i] = in(me_, i);
        comm_.reduce(s, r, count, tc::DataType::kFloat32, tc::RedOp::kSum, root);
        if (me_ == root) expect_each("reduce", r, count, sum);
        return;
      default:
        return;
    }
  }

  // Three blocks share a cooperative put-with-signal to the next PE; block 0 then waits, inside the kernel,
  // for the previous PE's transfer while the others wait for it at the grid sync.
  void kernel(long it) {
    const size_t bytes = size_t{64} << (7 * (it % 3));  // 64 B, 8 KiB, 1 MiB
    const uint64_t want = kernel_expect_ + bytes;
    tk::launch({.block_num = 3, .name = "fault_mix"}, [&](tk::BlockContext& b) {
      tk::coop_put(b, kernel_dst_, src_.data(), bytes, kernel_sig_, to_);
      b.sync();
      if (b.block_idx() == 0) shmem_signal_wait_until(kernel_sig_, SHMEM_CMP_GE, want);
      b.sync();
    });
    kernel_expect_ = want;
    for (size_t i = 0; i < bytes; i += 61)
      if (kernel_dst_[i] != pattern(i, from_)) wrong("kernel put", i, kernel_dst_[i], pattern(i, from_));
  }

  // Collectives on a comm stream while this thread computes and polls the events; then checks.
  void stream(long it) {
    const size_t count = kCounts[static_cast<size_t>(it) % 4];
    const size_t n = static_cast<size_t>(n_);
    // As in collective(): inputs of this iteration, outputs poisoned first.
    const float shift = 16.0f * static_cast<float>(it % 11);
    const float sum = static_cast<float>(n_ * (n_ + 1) / 2) + static_cast<float>(n_) * shift;
    std::fill_n(stream_small_.data(), stream_small_.size(), static_cast<float>(me_ + 1) + shift);
    std::fill_n(stream_send_.data(), count * n, static_cast<float>(me_ + 1) + shift);
    std::fill_n(stream_recv_.data(), count * n, -1.0f);
    stream_comm_.allreduce(stream_small_.data(), stream_small_.data(), stream_small_.size(), tc::DataType::kFloat32,
                           tc::RedOp::kSum, stream_);
    tc::Event first;
    first.record(stream_);
    stream_comm_.allgather(stream_send_.data(), stream_recv_.data(), count, tc::DataType::kFloat32, stream_);
    stream_comm_.barrier(stream_);
    tc::Event last;
    last.record(stream_);
    // Compute between polls, and yield: with more PEs than CPUs the stream threads need them.
    volatile double busy = 0;
    while (!last.query()) {
      for (int i = 0; i < 1000; ++i) busy = busy + i;
      std::this_thread::yield();
    }
    first.synchronize();
    last.synchronize();
    expect_all("stream allreduce", stream_small_.data(), stream_small_.size(), sum);
    for (size_t q = 0; q < n; ++q)
      expect_all("stream allgather", stream_recv_.data() + q * count, count, static_cast<float>(q + 1) + shift);
  }

  // Work outside the library (no Tessera call, so no wait that watches the job's abort word), then a barrier.
  // A stretch longer than the launcher gives PEs to end on the abort word plus the script's largest delay:
  // the survivors of a kill are computing when the job ends and only the launcher's SIGTERM ends them.
  void compute() {
    volatile double acc = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (std::chrono::steady_clock::now() < until)
      for (int i = 0; i < 10000; ++i) acc = acc + i;
    shmem_barrier_all();
  }

  const int me_, n_, to_, from_;
  char* put_dst_ = nullptr;
  char* kernel_dst_ = nullptr;
  uint64_t* small_ = nullptr;
  uint64_t* put_sig_ = nullptr;
  uint64_t* kernel_sig_ = nullptr;
  uint64_t put_rounds_ = 0;     // put steps so far: the value put_sig_ reaches once the previous PE's last arrived
  uint64_t kernel_expect_ = 0;  // bytes the previous PE's kernels have put so far
  std::vector<char> src_;
  std::vector<float> send_, recv_, stream_send_, stream_recv_, stream_small_;
  tc::Comm comm_, stream_comm_;
  tc::Stream stream_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--phases") == 0) {
    for (const char* name : kPhaseNames) std::printf("%s\n", name);
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <dir> <phase> [seed] [iterations]\n", argv[0]);
    return 2;
  }
  int phase = -1;
  for (int i = 0; i < kPhases; ++i)
    if (std::strcmp(argv[2], kPhaseNames[i]) == 0) phase = i;
  if (phase < 0) {
    std::fprintf(stderr, "fault_mix: unknown phase '%s'\n", argv[2]);
    return 2;
  }
  const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const long iterations = argc > 4 ? std::atol(argv[4]) : -1;
  shmem_init();
  {
    Work w;
    std::mt19937_64 rng(seed);  // the same sequence on every PE: they must run the same collectives
    for (long it = 0; iterations < 0 || it < iterations; ++it) {
      Phase p = static_cast<Phase>(phase);
      if (p == Phase::kMix) p = static_cast<Phase>(rng() % static_cast<uint64_t>(Phase::kMix));
      w.step(p, it);
      if (it == 0) {
        shmem_barrier_all();  // every PE is in the loop before any pid is known to the script
        const std::string dir = argv[1];
        if (shmem_my_pe() == 0) write_file(dir + "/job", std::string(std::getenv("TESSERA_JOB_ID") ?: "") + "\n");
        write_file(dir + "/pe" + std::to_string(shmem_my_pe()), std::to_string(getpid()) + "\n");
      }
    }
    shmem_barrier_all();
  }
  shmem_finalize();
  return 0;
}
