#include <tessera/kernel.hpp>
#include <cstdio>
#include <numeric>
#include <vector>
int main() {
  std::vector<double> data(1 << 20, 1.0), partial(4);
  double total = 0;
  auto slice = [&](int b) { return data.data() + b * (data.size() / 4); };
  tessera::kernel::launch({.block_num = 4}, [&](tessera::kernel::BlockContext& b) {
    partial[b.block_idx()] = std::accumulate(slice(b.block_idx()), slice(b.block_idx() + 1), 0.0);
    b.sync();                                  // every block's partial is now visible to every block
    if (b.block_idx() == 0) total = partial[0] + partial[1] + partial[2] + partial[3];
  });
  std::printf("total %g (%s)\n", total, total == data.size() ? "ok" : "WRONG");
  return total == data.size() ? 0 : 1;
}
