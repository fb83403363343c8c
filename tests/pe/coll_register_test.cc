// Registered buffers (coll.h: tesseraCommRegister / tesseraCommDeregister; coll.hpp: Comm::register_buffer)
// at 1-4 PEs and across hosts (coll_algos.cmake): contents kept through registration and deregistration;
// collectives on registered buffers take the in-place rows within a host and give the reference results;
// references counted; and every refusal given alike on every member, the communicator usable afterwards.
#include <shmem.h>
#include <sys/mman.h>
#include <tessera/coll.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <tessera/coll.hpp>

#include "coll/handle.h"
#include "coll/plan.h"
#include "pe_main.h"

namespace {

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }
std::string last_error() { return tesseraGetLastError(); }

// Memory of its own pages (registration shares whole pages, so two small vectors could share one).
template <typename T>
struct PageBuf {
  explicit PageBuf(size_t n) : n_(n), bytes_((n * sizeof(T) + 4095) & ~size_t{4095}) {
    p_ = static_cast<T*>(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~PageBuf() { munmap(p_, bytes_); }
  T* data() { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_[i]; }
  size_t n_, bytes_;
  T* p_;
};

class Registered : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(tesseraCommInitAll(&comm_), tesseraSuccess) << last_error(); }
  void TearDown() override { EXPECT_EQ(tesseraCommDestroy(comm_), tesseraSuccess) << last_error(); }
  // Within one host the registered calls are in place; across hosts (as_hosts.sh, namespace hosts) or alone
  // they are not.
  bool in_place_expected() const { return npes() > 1 && comm_->c->hier == nullptr; }
  // The last call's symmetric flag (the dispatch cache's record of it).
  bool last_in_place() const { return comm_->c->last_symmetric; }
  void check_usable() {
    std::vector<int64_t> x(5, 3), y(5);
    ASSERT_EQ(tesseraAllReduce(x.data(), y.data(), 5, tesseraInt64, tesseraSum, comm_), tesseraSuccess) << last_error();
    for (int64_t v : y) ASSERT_EQ(v, 3 * npes());
  }
  tesseraComm_t comm_ = nullptr;
};

TEST_F(Registered, ContentsSurviveAndCollectivesRunInPlace) {
  const int n = npes(), r = me();
  const size_t N = static_cast<size_t>(n);
  for (size_t count : {size_t{1024}, size_t{1} << 20}) {  // whole pages: shared in place
    SCOPED_TRACE(count);
    PageBuf<float> send(count * N), recv(count * N);
    for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(r + 1) + static_cast<float>(i % 251);
    void *hs = nullptr, *hr = nullptr;
    ASSERT_EQ(tesseraCommRegister(comm_, send.data(), send.size() * sizeof(float), &hs), tesseraSuccess) << last_error();
    ASSERT_EQ(tesseraCommRegister(comm_, recv.data(), recv.size() * sizeof(float), &hr), tesseraSuccess) << last_error();
    for (size_t i = 0; i < send.size(); ++i)
      ASSERT_EQ(send[i], static_cast<float>(r + 1) + static_cast<float>(i % 251)) << "registration changed element " << i;
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((r + 1) * (round + 1)) + static_cast<float>(i % 251);
      ASSERT_EQ(tesseraAllReduce(send.data(), recv.data(), count, tesseraFloat32, tesseraSum, comm_), tesseraSuccess)
          << last_error();
      EXPECT_EQ(last_in_place(), in_place_expected());
      const float base = static_cast<float>((round + 1) * n * (n + 1) / 2);
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(recv[i], base + static_cast<float>(n) * static_cast<float>(i % 251)) << "round " << round << " element " << i;
      // In place in one registered buffer, then an allgather and an alltoall between the two.
      ASSERT_EQ(tesseraAllReduce(recv.data(), recv.data(), count, tesseraFloat32, tesseraMax, comm_), tesseraSuccess);
      EXPECT_EQ(recv[count - 1], base + static_cast<float>(n) * static_cast<float>((count - 1) % 251));
      ASSERT_EQ(tesseraAllGather(send.data(), recv.data(), count, tesseraFloat32, comm_), tesseraSuccess) << last_error();
      EXPECT_EQ(last_in_place(), in_place_expected());
      for (size_t i = 0; i < count * N; ++i)
        ASSERT_EQ(recv[i], static_cast<float>((static_cast<int>(i / count) + 1) * (round + 1)) +
                               static_cast<float>((i % count) % 251)) << "allgather element " << i;
      for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(r * 100000 + static_cast<int>(i % 99991));
      ASSERT_EQ(tesseraAllToAll(send.data(), recv.data(), count, tesseraFloat32, comm_), tesseraSuccess) << last_error();
      for (size_t i = 0; i < count * N; ++i) {
        const size_t from = i / count, at = static_cast<size_t>(r) * count + i % count;
        ASSERT_EQ(recv[i], static_cast<float>(static_cast<int>(from) * 100000 + static_cast<int>(at % 99991))) << i;
      }
      const int root = n - 1;
      ASSERT_EQ(tesseraBroadcast(send.data(), recv.data(), count, tesseraFloat32, root, comm_), tesseraSuccess);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], static_cast<float>(root * 100000 + static_cast<int>(i % 99991)));
    }
    // A plan on registered buffers is made for the in-place rows too.
    tesseraPlan_t plan = nullptr;
    ASSERT_EQ(tesseraAllReduceInit(send.data(), recv.data(), count, tesseraFloat32, tesseraSum, comm_, &plan), tesseraSuccess);
    EXPECT_EQ(plan->p->a.symmetric, in_place_expected());
    ASSERT_EQ(tesseraStart(plan, nullptr), tesseraSuccess) << last_error();
    ASSERT_EQ(tesseraCommDeregister(comm_, hs), tesseraSuccess) << last_error();
    ASSERT_EQ(tesseraCommDeregister(comm_, hr), tesseraSuccess) << last_error();
    // The plan was made in place on them: it refuses to start now, on every member alike.
    if (in_place_expected()) {
      EXPECT_EQ(tesseraStart(plan, nullptr), tesseraInvalidArgument);
      EXPECT_NE(last_error().find("tesseraStart: the plan of tesseraAllReduceInit works on registered buffers in "
                                  "place, and they are no longer registered"), std::string::npos) << last_error();
    }
    tesseraPlanFree(plan);
    // Private again, contents kept, writable; calls are no longer in place.
    const float kept = recv[count / 2];
    recv[count / 2] = kept + 1;
    EXPECT_EQ(recv[count / 2], kept + 1);
    ASSERT_EQ(tesseraAllReduce(send.data(), recv.data(), count, tesseraFloat32, tesseraSum, comm_), tesseraSuccess);
    EXPECT_FALSE(last_in_place());
  }
}

TEST_F(Registered, ReferencesAreCounted) {
  PageBuf<int64_t> buf(4096);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = me();
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(tesseraCommRegister(comm_, buf.data(), buf.size() * 8, &a), tesseraSuccess) << last_error();
  ASSERT_EQ(tesseraCommRegister(comm_, buf.data(), buf.size() * 8, &b), tesseraSuccess) << last_error();
  EXPECT_EQ(a, b);
  ASSERT_EQ(tesseraCommDeregister(comm_, a), tesseraSuccess);
  ASSERT_EQ(tesseraAllReduce(buf.data(), buf.data(), buf.size(), tesseraInt64, tesseraSum, comm_), tesseraSuccess);
  EXPECT_EQ(last_in_place(), in_place_expected());  // one reference left
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], int64_t{npes()} * (npes() - 1) / 2);
  ASSERT_EQ(tesseraCommDeregister(comm_, b), tesseraSuccess);
  EXPECT_EQ(tesseraCommDeregister(comm_, b), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("is not a live registration of communicator"), std::string::npos) << last_error();
}

TEST_F(Registered, RefusalsAreTheSameOnEveryMember) {
  PageBuf<int64_t> buf(8192);
  void* h = nullptr;
  ASSERT_EQ(tesseraCommRegister(comm_, buf.data(), buf.size() * 8, &h), tesseraSuccess) << last_error();
  void* other = nullptr;
  // Overlapping the registered buffer (not the same one).
  EXPECT_EQ(tesseraCommRegister(comm_, buf.data() + 100, 800, &other), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("tesseraCommRegister: 800 bytes at"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("overlap the registered buffer of 65536 bytes"), std::string::npos) << last_error();
  check_usable();
  // Null on one member: its own message there, the verdict elsewhere.
  PageBuf<int64_t> more(4096);
  EXPECT_EQ(tesseraCommRegister(comm_, me() == npes() - 1 ? nullptr : more.data(), more.size() * 8, &other),
            tesseraInvalidArgument);
  if (me() == npes() - 1)
    EXPECT_NE(last_error().find("is not a buffer to register"), std::string::npos) << last_error();
  else
    EXPECT_NE(last_error().find("refused its buffer, so no member registers"), std::string::npos) << last_error();
  check_usable();
  // The symmetric heap is reachable already.
  void* heap = shmem_malloc(4096);
  EXPECT_EQ(tesseraCommRegister(comm_, heap, 4096, &other), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("lie in the symmetric heap or the program's globals"), std::string::npos) << last_error();
  check_usable();
  // Memory this process may not write (only checked where pages are shared: several members, one host).
  if (in_place_expected()) {
    void* ro = mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(ro, MAP_FAILED);
    EXPECT_EQ(tesseraCommRegister(comm_, ro, 8192, &other), tesseraInvalidArgument);
    EXPECT_NE(last_error().find("is not private memory this process may read and write (its mapping:"), std::string::npos)
        << last_error();
    munmap(ro, 8192);
    check_usable();
  }
  // A handle that is not a registration of this communicator.
  EXPECT_EQ(tesseraCommDeregister(comm_, buf.data()), tesseraInvalidArgument);
  ASSERT_EQ(tesseraCommDeregister(comm_, h), tesseraSuccess);
  // The buffer whose registration was refused everywhere can be registered now.
  ASSERT_EQ(tesseraCommRegister(comm_, more.data(), more.size() * 8, &other), tesseraSuccess) << last_error();
  ASSERT_EQ(tesseraCommDeregister(comm_, other), tesseraSuccess);
  shmem_free(heap);
}

// Registrations left at destruction are released with the communicator; the C++ forms.
TEST(RegisteredCpp, CommRegisterBufferAndDestroy) {
  const int n = npes();
  std::vector<double> g(1 << 16);
  {
    tessera::coll::Comm comm = tessera::coll::Comm::world();
    void* h = comm.register_buffer(g.data(), g.size() * sizeof(double));
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(comm.rank() + 1) * static_cast<double>(i);
    comm.allreduce(g.data(), g.data(), g.size(), tessera::coll::DataType::kFloat64, tessera::coll::RedOp::kAvg);
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], static_cast<double>(n + 1) / 2 * static_cast<double>(i));
    (void)h;  // left registered: the destructor releases it
  }
  g[7] = 42;  // private again
  EXPECT_EQ(g[7], 42);
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  try {
    comm.deregister_buffer(g.data());
    ADD_FAILURE() << "deregistering a pointer that is no handle succeeded";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid argument: tesseraCommDeregister:"), std::string::npos) << e.what();
  }
}

}  // namespace
