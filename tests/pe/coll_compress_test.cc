// Compressed collectives across hosts (coll.h: tesseraCommSetCompression; hier/compress.h) at 1-2 PEs on one
// host and across hosts (coll_algos.cmake: 2x1, 3x1, 2x2): a float32 sum allreduce with the phase between
// hosts coded as bf16, fp8 or int8 is within the code's error of the exact sum and differs from the
// uncompressed result (it was coded), every member holds the same bits, and on one host nothing changes;
// error feedback keeps the sum over repeated calls on one buffer within one call's error where without it
// the error grows with the calls; averages, other types, and the collective checks of the setting; allgathers
// coded (tesseraCommSetAllGatherCompression) the same way, decoded alike on every member.
#include <shmem.h>
#include <tessera/coll.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <tessera/coll.hpp>

#include "pe_main.h"
#include "pgas/runtime.h"
#include "pgas/team.h"

namespace {

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }
bool spans() { return tessera::pgas::team_world()->spans_hosts; }

struct World {
  World() { EXPECT_EQ(tesseraCommInitAll(&comm), tesseraSuccess); }
  ~World() { tesseraCommDestroy(comm); }
  tesseraComm_t comm = nullptr;
};

// This PE's input: distinct per PE, of mixed signs and magnitudes.
std::vector<float> input(size_t n, int pe) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(pe)) * static_cast<float>(1 + pe) *
           (i % 97 == 0 ? 100.0f : 1.0f);
  return x;
}

// The largest error a code may make on one host's partial sum, summed over the hosts: per element for bf16
// (relative 2^-8 of the partial, bounded by the sum of magnitudes), per block for fp8 and int8 (relative
// 2^-4 plus the block's subnormal step for fp8; half a step of the block's scale for int8), bounded with the
// largest partial magnitude of the whole buffer. Generous by a factor of 2, never zero.
double bound(tesseraCompress_t mode, double abs_sum, double max_partial, int hosts) {
  switch (mode) {
    case tesseraCompressBf16: return 2 * std::ldexp(abs_sum, -8) + 1e-30;
    case tesseraCompressFp8: return 2 * (0.0625 * abs_sum + hosts * max_partial / 448 / 512) + 1e-30;
    case tesseraCompressInt8: return 2 * hosts * max_partial / 127 / 2 + 1e-30;
    default: return 0;
  }
}

// Min and max over the members of a 64-bit value: equal when every member holds the same.
bool same_everywhere(tesseraComm_t comm, uint64_t v) {
  uint64_t lo = 0, hi = 0;
  EXPECT_EQ(tesseraAllReduce(&v, &lo, 1, tesseraUint64, tesseraMin, comm), tesseraSuccess);
  EXPECT_EQ(tesseraAllReduce(&v, &hi, 1, tesseraUint64, tesseraMax, comm), tesseraSuccess);
  return lo == hi;
}
uint64_t digest(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  for (float f : v) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    h = (h ^ b) * 1099511628211ull;
  }
  return h;
}

TEST(Compress, EachCodeWithinItsErrorAndTheSameOnEveryMember) {
  World w;
  constexpr size_t kCount = 100003;
  const int n = npes();
  const std::vector<float> x = input(kCount, me());
  // The exact sum and the magnitudes, from every PE's input (each PE can make them all).
  std::vector<double> exact(kCount, 0.0), abs_sum(kCount, 0.0);
  double max_partial = 0;
  for (int pe = 0; pe < n; ++pe) {
    const std::vector<float> y = input(kCount, pe);
    for (size_t i = 0; i < kCount; ++i) {
      exact[i] += y[i];
      abs_sum[i] += std::fabs(y[i]);
      max_partial = std::max(max_partial, abs_sum[i]);
    }
  }
  std::vector<float> plain(kCount);
  ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressNone, 0), tesseraSuccess);
  ASSERT_EQ(tesseraAllReduce(x.data(), plain.data(), kCount, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
  for (tesseraCompress_t mode : {tesseraCompressBf16, tesseraCompressFp8, tesseraCompressInt8}) {
    ASSERT_EQ(tesseraCommSetCompression(w.comm, mode, 0), tesseraSuccess) << tesseraGetLastError();
    std::vector<float> out(kCount);
    ASSERT_EQ(tesseraAllReduce(x.data(), out.data(), kCount, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
    size_t over = 0, coded = 0;
    for (size_t i = 0; i < kCount; ++i) {
      if (std::fabs(out[i] - exact[i]) > bound(mode, abs_sum[i], max_partial, n) + 1e-5 * abs_sum[i]) ++over;
      if (out[i] != plain[i]) ++coded;
    }
    EXPECT_EQ(over, 0u) << "mode " << mode << ": elements beyond the code's error";
    if (spans()) EXPECT_GT(coded, kCount / 10) << "mode " << mode << ": the phase between hosts was not coded";
    else EXPECT_EQ(coded, 0u) << "mode " << mode << ": within one host nothing is coded";
    EXPECT_TRUE(same_everywhere(w.comm, digest(out))) << "mode " << mode << ": members hold different bits";
  }
  ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressNone, 1), tesseraSuccess);
}

// Repeated calls on one buffer: with feedback the sum of the outputs tracks the sum of the exact results to
// within about one call's error; without it the same error is made every call, and it adds up.
TEST(Compress, ErrorFeedbackKeepsRepeatedCallsFromDrifting) {
  World w;
  constexpr size_t kCount = 4099;
  constexpr int kSteps = 40;
  const std::vector<float> x = input(kCount, me());
  double worst[2] = {0, 0};  // [feedback off, on]: the largest |sum of outputs - steps x exact| over elements
  for (int fb = 0; fb < 2; ++fb) {
    ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressInt8, fb), tesseraSuccess);
    std::vector<float> exact(kCount);
    ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressNone, fb), tesseraSuccess);
    ASSERT_EQ(tesseraAllReduce(x.data(), exact.data(), kCount, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
    ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressInt8, fb), tesseraSuccess);
    std::vector<double> total(kCount, 0.0);
    std::vector<float> out(kCount);
    for (int s = 0; s < kSteps; ++s) {
      ASSERT_EQ(tesseraAllReduce(x.data(), out.data(), kCount, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
      for (size_t i = 0; i < kCount; ++i) total[i] += out[i];
    }
    for (size_t i = 0; i < kCount; ++i)
      worst[fb] = std::max(worst[fb], std::fabs(total[i] - kSteps * static_cast<double>(exact[i])));
  }
  if (spans()) {
    EXPECT_GT(worst[0], 8 * worst[1]) << "without feedback " << worst[0] << ", with " << worst[1];
  } else {
    EXPECT_EQ(worst[0], 0.0);
    EXPECT_EQ(worst[1], 0.0);
  }
  ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressNone, 1), tesseraSuccess);
}

// Averages are coded as sums and divided once; other types and operators are not coded (exact).
TEST(Compress, AveragesAndWhatIsNotCoded) {
  World w;
  const int n = npes();
  ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressBf16, 1), tesseraSuccess);
  std::vector<float> x(1000, static_cast<float>(me() + 1)), avg(1000);
  ASSERT_EQ(tesseraAllReduce(x.data(), avg.data(), x.size(), tesseraFloat32, tesseraAvg, w.comm), tesseraSuccess);
  for (float v : avg) EXPECT_NEAR(v, (n + 1) / 2.0, 1e-2 * (n + 1));
  std::vector<int32_t> xi(1000), yi(1000);
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = static_cast<int32_t>(i * 977 + static_cast<size_t>(me()));
  ASSERT_EQ(tesseraAllReduce(xi.data(), yi.data(), xi.size(), tesseraInt32, tesseraSum, w.comm), tesseraSuccess);
  for (size_t i = 0; i < xi.size(); ++i)
    EXPECT_EQ(yi[i], static_cast<int32_t>(n * static_cast<int32_t>(i * 977) + n * (n - 1) / 2));
  std::vector<float> mx(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(me()) / 3.0f;
  ASSERT_EQ(tesseraAllReduce(x.data(), mx.data(), x.size(), tesseraFloat32, tesseraMax, w.comm), tesseraSuccess);
  for (float v : mx) EXPECT_EQ(v, 1.0f + static_cast<float>(n - 1) / 3.0f) << "max is not coded";
  ASSERT_EQ(tesseraCommSetCompression(w.comm, tesseraCompressNone, 1), tesseraSuccess);
}

// The setting is collective: a mode out of range and members that disagree fail every member alike, and
// the communicator goes on working. The C++ form takes the same path.
TEST(Compress, SettingIsCheckedOnEveryMember) {
  World w;
  EXPECT_EQ(tesseraCommSetCompression(w.comm, static_cast<tesseraCompress_t>(me() == 0 ? 7 : 1), 1),
            tesseraInvalidArgument);
  const std::string e = tesseraGetLastError();
  if (me() == 0) EXPECT_NE(e.find("mode 7 is not tesseraCompressNone, Bf16, Fp8 or Int8 (0..3)"), std::string::npos) << e;
  else EXPECT_NE(e.find("rank 0 (PE 0) passed a mode out of range, so no member sets it"), std::string::npos) << e;
  if (npes() > 1) {
    EXPECT_EQ(tesseraCommSetCompression(w.comm, me() == 1 ? tesseraCompressInt8 : tesseraCompressBf16, 1),
              tesseraInvalidArgument);
    const std::string other = me() == 1 ? "sets bf16 with feedback on where rank 1" : "sets int8 with feedback on where rank";
    EXPECT_NE(std::string(tesseraGetLastError()).find(other), std::string::npos) << tesseraGetLastError();
  }
  float one = 1, sum = 0;
  ASSERT_EQ(tesseraAllReduce(&one, &sum, 1, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
  EXPECT_EQ(sum, static_cast<float>(npes()));
  tessera::coll::Comm c = tessera::coll::Comm::world();
  c.set_compression(tessera::coll::Comm::Compression::kFp8, false);
  EXPECT_THROW(c.set_compression(static_cast<tessera::coll::Comm::Compression>(9)), tessera::Error);
}

// Allgathers coded between hosts (tesseraCommSetAllGatherCompression): every block within its code's error of
// the sender's input and, across hosts, coded (its own block too), on one host exact; every member the same
// bits; allgatherv with uneven counts and the in-place form alike; the reductions' setting apart from it.
TEST(Compress, AllgathersCodedTheSameOnEveryMember) {
  World w;
  constexpr size_t kCount = 5003;  // not a multiple of the codes' block
  const int n = npes();
  const size_t N = static_cast<size_t>(n);
  std::vector<std::vector<float>> inputs;
  std::vector<double> max_abs;
  for (int pe = 0; pe < n; ++pe) {
    inputs.push_back(input(kCount, pe));
    double m = 0;
    for (float v : inputs.back()) m = std::max(m, static_cast<double>(std::fabs(v)));
    max_abs.push_back(m);
  }
  const std::vector<float>& x = inputs[static_cast<size_t>(me())];
  std::vector<float> plain(N * kCount);
  ASSERT_EQ(tesseraAllGather(x.data(), plain.data(), kCount, tesseraFloat32, w.comm), tesseraSuccess);
  std::vector<size_t> counts(N), displs(N);
  size_t total = 0;
  for (size_t r = 0; r < N; ++r) counts[r] = 1000 + 300 * r, displs[r] = total, total += counts[r];
  for (tesseraCompress_t mode : {tesseraCompressBf16, tesseraCompressFp8, tesseraCompressInt8}) {
    ASSERT_EQ(tesseraCommSetAllGatherCompression(w.comm, mode), tesseraSuccess) << tesseraGetLastError();
    std::vector<float> out(N * kCount);
    ASSERT_EQ(tesseraAllGather(x.data(), out.data(), kCount, tesseraFloat32, w.comm), tesseraSuccess);
    size_t over = 0, coded = 0, own_coded = 0;
    for (size_t r = 0; r < N; ++r)
      for (size_t i = 0; i < kCount; ++i) {
        const double want = inputs[r][i], got = out[r * kCount + i];
        if (std::fabs(got - want) > bound(mode, std::fabs(want), max_abs[r], 1)) ++over;
        if (out[r * kCount + i] != plain[r * kCount + i]) ++coded, own_coded += r == static_cast<size_t>(me());
      }
    EXPECT_EQ(over, 0u) << "mode " << mode << ": elements beyond the code's error";
    if (spans()) {
      EXPECT_GT(coded, N * kCount / 10) << "mode " << mode << ": the allgather was not coded";
      EXPECT_GT(own_coded, kCount / 10) << "mode " << mode << ": this member's own block is not the decoded one";
    } else {
      EXPECT_EQ(coded, 0u) << "mode " << mode << ": within one host nothing is coded";
    }
    EXPECT_TRUE(same_everywhere(w.comm, digest(out))) << "mode " << mode << ": members hold different bits";
    // In place (this member's block already at its place in the output): the same bits.
    std::vector<float> inplace(N * kCount);
    std::memcpy(inplace.data() + static_cast<size_t>(me()) * kCount, x.data(), kCount * sizeof(float));
    ASSERT_EQ(tesseraAllGather(inplace.data() + static_cast<size_t>(me()) * kCount, inplace.data(), kCount,
                               tesseraFloat32, w.comm), tesseraSuccess);
    EXPECT_EQ(inplace, out) << "mode " << mode << ": in place differs";
    // Allgatherv, uneven counts.
    std::vector<float> v(total);
    ASSERT_EQ(tesseraAllGatherV(x.data(), counts[static_cast<size_t>(me())], v.data(), counts.data(), displs.data(),
                                tesseraFloat32, w.comm), tesseraSuccess) << tesseraGetLastError();
    size_t v_over = 0;
    for (size_t r = 0; r < N; ++r)
      for (size_t i = 0; i < counts[r]; ++i)
        if (std::fabs(v[displs[r] + i] - inputs[r][i]) > bound(mode, std::fabs(inputs[r][i]), max_abs[r], 1)) ++v_over;
    EXPECT_EQ(v_over, 0u) << "mode " << mode << ": allgatherv elements beyond the code's error";
    EXPECT_TRUE(same_everywhere(w.comm, digest(v))) << "mode " << mode << ": allgatherv bits differ";
    // The reductions and other types are not coded by this setting.
    std::vector<float> sum(kCount), exact(kCount);
    ASSERT_EQ(tesseraCommSetAllGatherCompression(w.comm, tesseraCompressNone), tesseraSuccess);
    ASSERT_EQ(tesseraAllReduce(x.data(), exact.data(), kCount, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
    ASSERT_EQ(tesseraCommSetAllGatherCompression(w.comm, mode), tesseraSuccess);
    ASSERT_EQ(tesseraAllReduce(x.data(), sum.data(), kCount, tesseraFloat32, tesseraSum, w.comm), tesseraSuccess);
    EXPECT_EQ(sum, exact) << "mode " << mode << ": the allgather setting coded an allreduce";
    std::vector<int32_t> xi(100, me() * 1000 + 7), yi(100 * N);
    ASSERT_EQ(tesseraAllGather(xi.data(), yi.data(), xi.size(), tesseraInt32, w.comm), tesseraSuccess);
    for (size_t i = 0; i < yi.size(); ++i) ASSERT_EQ(yi[i], static_cast<int32_t>(i / 100) * 1000 + 7);
  }
  ASSERT_EQ(tesseraCommSetAllGatherCompression(w.comm, tesseraCompressNone), tesseraSuccess);
  std::vector<float> back(N * kCount);
  ASSERT_EQ(tesseraAllGather(x.data(), back.data(), kCount, tesseraFloat32, w.comm), tesseraSuccess);
  EXPECT_EQ(back, plain) << "none: the allgather is exact again";
  // Checked on every member, as tesseraCommSetCompression is; the C++ form takes the same path.
  EXPECT_EQ(tesseraCommSetAllGatherCompression(w.comm, static_cast<tesseraCompress_t>(me() == 0 ? 5 : 2)),
            tesseraInvalidArgument);
  const std::string e = tesseraGetLastError();
  EXPECT_NE(e.find("tesseraCommSetAllGatherCompression: "), std::string::npos) << e;
  if (me() == 0) {
    EXPECT_NE(e.find("mode 5 is not tesseraCompressNone"), std::string::npos) << e;
  }
  tessera::coll::Comm c = tessera::coll::Comm::world();
  c.set_allgather_compression(tessera::coll::Comm::Compression::kBf16);
  EXPECT_THROW(c.set_allgather_compression(static_cast<tessera::coll::Comm::Compression>(-1)), tessera::Error);
}

}  // namespace
