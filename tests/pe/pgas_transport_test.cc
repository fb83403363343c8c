// The data path through a transport record (peers without a mapping, as on another host), before any such
// transport exists: each PE reroutes its right-hand neighbour through a test record whose functions copy
// through the mapping chosen at init, then checks that puts, gets, atomics, signals, fence and quiet go
// through the record and deliver what the shared-memory path would.
// Nothing collective runs while a peer is rerouted (peers.h): every test restores the route before its
// barrier.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pe_main.h"
#include "pgas/peers.h"
#include "pgas/runtime.h"
#include "sync/wait.h"

namespace {
namespace tt = tessera::transport;
namespace pgas = tessera::pgas;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }
int right() { return (me() + 1) % npes(); }
int left() { return (me() + npes() - 1) % npes(); }

// Calls of each function of the record (this PE's).
struct Calls {
  std::atomic<int> put{0}, get{0}, atomic{0}, put_signal{0}, fence{0}, quiet{0};
};
Calls g_calls;
tt::PeerMemory g_mem;  // the rerouted peer's mapping from init

char* at(int pe, uint64_t off) {
  EXPECT_EQ(pe, g_mem.pe);
  return off < g_mem.heap_bytes ? g_mem.heap + off : g_mem.data + (off - g_mem.heap_bytes);
}

void lb_put(int pe, uint64_t off, const void* src, size_t bytes) {
  ++g_calls.put;
  std::memcpy(at(pe, off), src, bytes);
  tessera::sync::notify_range(pe, off, bytes);
}
void lb_get(void* dst, int pe, uint64_t off, size_t bytes) {
  ++g_calls.get;
  std::memcpy(dst, at(pe, off), bytes);
}
template <typename W>
uint64_t lb_atomic_on(W* p, tt::AtomicOp op, W v, W cond) {
  std::atomic_ref<W> a(*p);
  switch (op) {
    case tt::AtomicOp::kFetch: return a.load(std::memory_order_acquire);
    case tt::AtomicOp::kSet: a.store(v, std::memory_order_release); return 0;
    case tt::AtomicOp::kSwap: return a.exchange(v);
    case tt::AtomicOp::kCompareSwap: a.compare_exchange_strong(cond, v); return cond;
    case tt::AtomicOp::kFetchAdd: return a.fetch_add(v);
    case tt::AtomicOp::kFetchAnd: return a.fetch_and(v);
    case tt::AtomicOp::kFetchOr: return a.fetch_or(v);
    case tt::AtomicOp::kFetchXor: return a.fetch_xor(v);
  }
  return 0;
}
uint64_t lb_atomic(int pe, uint64_t off, size_t size, tt::AtomicOp op, uint64_t v, uint64_t cond) {
  ++g_calls.atomic;
  char* p = at(pe, off);
  uint64_t old = size == 4 ? lb_atomic_on(reinterpret_cast<uint32_t*>(p), op, static_cast<uint32_t>(v),
                                          static_cast<uint32_t>(cond))
                           : lb_atomic_on(reinterpret_cast<uint64_t*>(p), op, v, cond);
  if (op != tt::AtomicOp::kFetch) tessera::sync::notify_range(pe, off, size);
  return old;
}
void lb_put_signal(int pe, uint64_t off, const void* src, size_t bytes, uint64_t sig_off, uint64_t signal,
                   tt::SignalOp op) {
  ++g_calls.put_signal;
  std::memcpy(at(pe, off), src, bytes);
  std::atomic_ref<uint64_t> s(*reinterpret_cast<uint64_t*>(at(pe, sig_off)));
  if (op == tt::kSignalSet) s.store(signal, std::memory_order_release);
  else s.fetch_add(signal, std::memory_order_acq_rel);
  tessera::sync::notify_range(pe, off, bytes);
  tessera::sync::notify_range(pe, sig_off, sizeof(uint64_t));
}
void lb_fence() {
  ++g_calls.fence;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
void lb_quiet() {
  ++g_calls.quiet;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
void lb_progress() {}
bool lb_reach(const tt::PeerInfo&, const tt::PeerInfo&) { return false; }  // only ever forced
tessera::Status lb_map(tt::PeerMemory*) { return tessera::Status::ok(); }  // no mapping: the data path calls us
void lb_unmap(tt::PeerMemory*) {}

const tt::Transport kLoopback{
    .name = "loopback",
    .description = "tests: every operation through the record's functions, copied through the init mapping",
    .caps = tt::kRma | tt::kAtomics,
    .can_reach = lb_reach,
    .map = lb_map,
    .unmap = lb_unmap,
    .put = lb_put,
    .get = lb_get,
    .atomic = lb_atomic,
    .put_signal = lb_put_signal,
    .fence = lb_fence,
    .quiet = lb_quiet,
    .progress = lb_progress,
};

// The body reroutes the right-hand neighbour after its allocations and barrier, and calls restore() before
// anything collective; TearDown restores it in case of a failed assertion.
class Rerouted : public testing::Test {
 protected:
  void SetUp() override {
    g_mem = pgas::mapping_for_test(right());
    ASSERT_NE(g_mem.heap, nullptr);
    before_.put = g_calls.put.load();
    before_.get = g_calls.get.load();
    before_.atomic = g_calls.atomic.load();
    before_.put_signal = g_calls.put_signal.load();
    before_.fence = g_calls.fence.load();
    before_.quiet = g_calls.quiet.load();
  }
  void restore() {
    if (!restored_) pgas::set_transport_for_test(right(), nullptr);
    restored_ = true;
  }
  void TearDown() override { restore(); }
  int calls(std::atomic<int> Calls::*f) { return (g_calls.*f).load() - (before_.*f).load(); }

  Calls before_;
  bool restored_ = false;
};

TEST_F(Rerouted, PutAndGetGoThroughTheRecord) {
  const size_t n = 1000;
  long* inbox = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  long* mine = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  for (size_t i = 0; i < n; ++i) mine[i] = me() * 100000 + static_cast<long>(i);
  shmem_barrier_all();
  pgas::set_transport_for_test(right(), &kLoopback);  // the barrier ran on the init mapping
  EXPECT_EQ(shmem_ptr(inbox, right()), nullptr) << "no load/store address for a peer without a mapping";
  std::vector<long> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = me() * 1000 + static_cast<long>(i);
  shmem_long_put(inbox, out.data(), n, right());
  shmem_long_p(inbox + n - 1, -7, right());
  shmem_quiet();
  std::vector<long> back(n);
  shmem_long_get(back.data(), inbox, n, right());
  EXPECT_EQ(shmem_long_g(inbox + 3, right()), me() * 1000 + 3);
  EXPECT_EQ(back[0], me() * 1000);
  EXPECT_EQ(back[n - 2], me() * 1000 + static_cast<long>(n - 2));
  EXPECT_EQ(back[n - 1], -7);
  // Strided, built on contiguous puts/gets: every other element.
  std::vector<long> odd(n / 2);
  shmem_long_iget(odd.data(), mine, 1, 2, n / 2, right());
  EXPECT_EQ(odd[5], right() * 100000 + 10);
  shmem_long_iput(mine + 1, odd.data(), 2, 1, n / 2, right());  // odd slots of right's mine <- its even ones
  EXPECT_EQ(calls(&Calls::put), 2 + static_cast<int>(n / 2));
  EXPECT_EQ(calls(&Calls::get), 2 + static_cast<int>(n / 2));
  EXPECT_GE(calls(&Calls::quiet), 1);
  restore();
  shmem_barrier_all();
  size_t wrong = 0;
  for (size_t i = 0; i + 1 < n; ++i) wrong += inbox[i] != left() * 1000 + static_cast<long>(i);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(inbox[n - 1], -7);
  EXPECT_EQ(mine[11], me() * 100000 + 10) << "iput from the left neighbour";
  shmem_barrier_all();
  shmem_free(inbox);
  shmem_free(mine);
}

TEST_F(Rerouted, AtomicsOnFourAndEightBytes) {
  int* i32 = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  unsigned long* i64 = static_cast<unsigned long*>(shmem_calloc(1, sizeof(long)));
  double* f64 = static_cast<double*>(shmem_calloc(1, sizeof(double)));
  shmem_barrier_all();
  pgas::set_transport_for_test(right(), &kLoopback);
  const int to = right();
  EXPECT_EQ(shmem_int_atomic_fetch_add(i32, 5, to), 0);
  EXPECT_EQ(shmem_int_atomic_fetch_inc(i32, to), 5);
  EXPECT_EQ(shmem_int_atomic_compare_swap(i32, 6, -1, to), 6);
  EXPECT_EQ(shmem_int_atomic_compare_swap(i32, 6, 9, to), -1) << "no swap: the old value is returned";
  EXPECT_EQ(shmem_int_atomic_fetch(i32, to), -1) << "the sign survives the 32-bit word";
  shmem_ulong_atomic_set(i64, 0xf00f'0000'0000'00ffUL, to);
  EXPECT_EQ(shmem_ulong_atomic_fetch_and(i64, 0xf000'0000'0000'000fUL, to), 0xf00f'0000'0000'00ffUL);
  EXPECT_EQ(shmem_ulong_atomic_fetch_or(i64, 0x10, to), 0xf000'0000'0000'000fUL);
  EXPECT_EQ(shmem_ulong_atomic_fetch_xor(i64, 0x1, to), 0xf000'0000'0000'001fUL);
  EXPECT_EQ(shmem_ulong_atomic_swap(i64, 42, to), 0xf000'0000'0000'001eUL) << "all 64 bits travel";
  shmem_ulong_atomic_add(i64, static_cast<unsigned long>(me()), to);
  shmem_double_atomic_set(f64, 2.5, to);
  EXPECT_EQ(shmem_double_atomic_swap(f64, -0.25, to), 2.5);
  EXPECT_EQ(calls(&Calls::atomic), 13);
  restore();
  shmem_barrier_all();
  EXPECT_EQ(*i32, -1);
  EXPECT_EQ(*i64, 42u + static_cast<unsigned long>(left()));
  EXPECT_EQ(*f64, -0.25);
  shmem_barrier_all();
  shmem_free(i32);
  shmem_free(i64);
  shmem_free(f64);
}

// The target waits on its signal (futex sleepers included): the record's put_signal must wake it.
TEST_F(Rerouted, PutWithSignalDeliversDataFirstAndWakesTheTarget) {
  const size_t n = 4096;
  long* inbox = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(2, sizeof(uint64_t)));
  shmem_barrier_all();
  pgas::set_transport_for_test(right(), &kLoopback);
  std::vector<long> out(n);
  for (uint64_t round = 1; round <= 5; ++round) {
    for (size_t i = 0; i < n; ++i) out[i] = me() * 31 + static_cast<long>(round * i);
    shmem_long_put_signal(inbox, out.data(), n, sig, round, SHMEM_SIGNAL_SET, right());
    shmem_signal_wait_until(sig, SHMEM_CMP_GE, round);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += inbox[i] != left() * 31 + static_cast<long>(round * i);
    ASSERT_EQ(wrong, 0u) << "round " << round;
    // The left neighbour may not overwrite inbox before this PE has read it: acknowledge on its sig[1].
    shmem_uint64_atomic_add(sig + 1, 1, left());
    shmem_signal_wait_until(sig + 1, SHMEM_CMP_GE, round);
  }
  EXPECT_GE(calls(&Calls::put_signal), 5);
  restore();
  shmem_barrier_all();
  EXPECT_EQ(shmem_signal_fetch(sig), 5u);
  EXPECT_EQ(shmem_signal_fetch(sig + 1), 5u);
  shmem_barrier_all();
  shmem_free(inbox);
  shmem_free(sig);
}

TEST_F(Rerouted, FenceAndQuietCallTheRecord) {
  long* x = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  shmem_barrier_all();
  pgas::set_transport_for_test(right(), &kLoopback);
  shmem_long_p(x, 1, right());
  shmem_fence();
  shmem_long_p(x + 1, 2, right());
  shmem_quiet();
  EXPECT_EQ(calls(&Calls::fence), 1);
  EXPECT_EQ(calls(&Calls::quiet), 1);
  restore();
  // With the chosen transport back (shm/self map everything), fence and quiet no longer call the record.
  shmem_fence();
  shmem_quiet();
  EXPECT_EQ(calls(&Calls::fence), 1);
  EXPECT_EQ(calls(&Calls::quiet), 1);
  shmem_barrier_all();
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(x[1], 2);
  shmem_barrier_all();
  shmem_free(x);
}

}  // namespace
