#include <tessera/tessera.hpp>
#include <tessera/coll.hpp>
#include <cstdio>
#include <vector>
int main() {
  tessera::Runtime rt;
  auto comm = tessera::coll::Comm::world();
  std::vector<float> grad(1 << 16, static_cast<float>(comm.rank()));
  comm.allreduce(grad.data(), grad.data(), grad.size(), tessera::coll::DataType::kFloat32,
                 tessera::coll::RedOp::kAvg);          // in place: every rank now holds the mean
  const float want = (comm.size() - 1) / 2.0f;
  const bool ok = grad.front() == want && grad.back() == want;
  std::printf("rank %d: mean %g %s\n", comm.rank(), grad.front(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
