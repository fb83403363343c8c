// A PE that computes (makes no Tessera call) for longer than TCP would wait on a shut window before giving
// a connection up, while a peer on another host has already sent it more than the sockets hold: the job goes
// on and the data arrives whole (bootstrap/tcp_socket.h: Reader::kInCalls). The data connections once ended
// the job with "Connection timed out" after about 3 s of such compute. Run as 2 hosts of 1 PE and 2 hosts of
// 2 (coll_algos.cmake).
#include <shmem.h>
#include <tessera/coll.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "pe_main.h"

namespace {

// Longer than the give-up time that broke the connection (3 s of TCP_USER_TIMEOUT, then the probes').
constexpr auto kCompute = std::chrono::milliseconds(4500);

TEST(BusyReader, ALongComputeWhileAPeersLargeMessageWaitsInTheSocket) {
  tesseraComm_t comm = nullptr;
  ASSERT_EQ(tesseraCommInitAll(&comm), tesseraSuccess);
  const int me = shmem_my_pe(), n = shmem_n_pes();
  constexpr size_t kCount = size_t{8} << 20;  // 32 MiB of float32: far more than a socket's buffers
  std::vector<float> x(kCount, static_cast<float>(me + 1)), sum(kCount);
  // PE 0 computes first; every other PE is in the allreduce and sends its part to it meanwhile.
  if (me == 0) std::this_thread::sleep_for(kCompute);
  ASSERT_EQ(tesseraAllReduce(x.data(), sum.data(), kCount, tesseraFloat32, tesseraSum, comm), tesseraSuccess)
      << tesseraGetLastError();
  const float want = static_cast<float>(n * (n + 1) / 2);
  size_t wrong = 0;
  for (float v : sum) wrong += v != want;
  EXPECT_EQ(wrong, 0u) << "elements of the allreduce not equal to " << want;
  // The other way round: the root broadcasts while the last PE computes.
  std::vector<float> b(kCount, me == 0 ? 3.5f : 0.0f);
  if (me == n - 1 && n > 1) std::this_thread::sleep_for(kCompute);
  ASSERT_EQ(tesseraBroadcast(b.data(), b.data(), kCount, tesseraFloat32, 0, comm), tesseraSuccess)
      << tesseraGetLastError();
  wrong = 0;
  for (float v : b) wrong += v != 3.5f;
  EXPECT_EQ(wrong, 0u) << "elements of the broadcast not equal to 3.5";
  EXPECT_EQ(tesseraCommDestroy(comm), tesseraSuccess);
}

}  // namespace
