// The C++ API (tessera/tessera.hpp) over the same core.
#include <gmock/gmock.h>
#include <tessera/tessera.hpp>

#include <string>
#include <vector>

#include "pe_main.h"

namespace {

TEST(Cpp, RuntimeSymmetricPutGetAtomics) {
  tessera::Runtime rt;  // nested init/finalize counts references
  int me = rt.my_pe(), n = rt.n_pes();
  auto buf = tessera::symmetric<double>(1000);
  auto counter = tessera::symmetric_zeroed<long>(1);
  std::vector<double> local(1000);
  for (size_t i = 0; i < local.size(); ++i) local[i] = me + 0.25 * static_cast<double>(i);
  tessera::put(buf.data(), local.data(), local.size(), (me + 1) % n);
  tessera::atomic_add(counter.data(), 3L, 0);
  rt.barrier();
  int from = (me + n - 1) % n;
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(buf[i], from + 0.25 * static_cast<double>(i));
  if (me == 0) {
    EXPECT_EQ(counter[0], 3L * n);
  }
  EXPECT_EQ(tessera::g(buf.data() + 999, (me + 1) % n), me + 0.25 * 999);
  double* peer = buf.on((me + 1) % n);
  if (shmem_team_translate_pe(SHMEM_TEAM_WORLD, (me + 1) % n, SHMEM_TEAM_SHARED) >= 0) {
    ASSERT_NE(peer, nullptr);
    EXPECT_EQ(peer[0], me + 0.0);
  } else {
    EXPECT_EQ(peer, nullptr);  // another host: reached by put and get only
  }
  rt.barrier();
}

TEST(Cpp, TeamsAndSignals) {
  auto world = tessera::Team::world();
  EXPECT_EQ(world.n_pes(), shmem_n_pes());
  auto evens = world.split_strided(0, 2, (world.n_pes() + 1) / 2);
  EXPECT_EQ(evens.valid(), world.my_pe() % 2 == 0);
  if (evens.valid()) evens.sync();
  auto sig = tessera::symmetric_zeroed<uint64_t>(1);
  auto data = tessera::symmetric<int>(4);
  int v[4] = {1, 2, 3, world.my_pe()};
  tessera::put_signal(data.data(), v, 4, sig.data(), 1, SHMEM_SIGNAL_SET, (world.my_pe() + 1) % world.n_pes());
  tessera::signal_wait_until(sig.data(), SHMEM_CMP_EQ, 1);
  EXPECT_EQ(data[3], (world.my_pe() + world.n_pes() - 1) % world.n_pes());
  tessera::barrier_all();
}

TEST(Cpp, AllocationFailureThrows) {
  EXPECT_THROW(tessera::symmetric<char>(size_t{1} << 45), tessera::Error);
  EXPECT_THROW(tessera::symmetric<double>(SIZE_MAX / 4), tessera::Error);
}

// Mistakes in a C++ call are reported as that call, not as the C routine underneath.
TEST(Cpp, ErrorsNameTheCppCall) {
  auto buf = tessera::symmetric<long>(4);
  const int n = shmem_n_pes();
  long local[4] = {};
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const tessera::Error& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_EQ(message([&] { tessera::put(buf.data(), local, 4, n); }),
            "tessera::put: PE " + std::to_string(n) + " is out of range: the job has " + std::to_string(n) +
                " PEs (0.." + std::to_string(n - 1) + ")");
  EXPECT_THAT(message([&] { tessera::get(local, local, 4, 0); }),
              ::testing::StartsWith("tessera::get: address 0x"));
  EXPECT_THAT(message([&] { tessera::atomic_fetch_add(buf.data(), 1L, -1); }),
              ::testing::StartsWith("tessera::atomic_fetch_add: PE -1 is out of range"));
  EXPECT_THAT(message([&] { tessera::put(buf.data(), local, SIZE_MAX / 2, 0); }),
              ::testing::HasSubstr("tessera::put: " + std::to_string(SIZE_MAX / 2) + " elements of 8 bytes overflow"));
  EXPECT_THAT(message([&] { (void)tessera::g(local + 1, 0); }), ::testing::StartsWith("tessera::g: address"));
  // Valid calls still work.
  tessera::p(buf.data(), 7L, shmem_my_pe());
  EXPECT_EQ(tessera::g(buf.data(), shmem_my_pe()), 7);
  tessera::barrier_all();
}

// One exception type for the whole C++ API: kernel and collective errors are caught as tessera::Error.
TEST(Cpp, OneErrorTypeAcrossTheApis) {
  EXPECT_THROW(tessera::kernel::launch({.block_num = 0}, [](tessera::kernel::BlockContext&) {}), tessera::Error);
  tessera::coll::Stream s;
  s.enqueue("fails", [] { throw tessera::kernel::Error("from a kernel"); });
  try {
    s.synchronize();
    ADD_FAILURE() << "no error";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("from a kernel"), std::string::npos) << e.what();
  }
}

}  // namespace
