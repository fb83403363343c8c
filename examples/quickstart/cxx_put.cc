#include <tessera/tessera.hpp>
#include <cstdio>
#include <vector>
int main() {
  tessera::Runtime rt;                                 // init; finalize at scope exit
  const int me = rt.my_pe(), n = rt.n_pes();
  auto buf = tessera::symmetric<double>(1024);         // collective, typed
  auto counter = tessera::symmetric<long>(1);
  counter.data()[0] = 0;
  rt.barrier();
  std::vector<double> local(1024, me + 0.5);
  tessera::put(buf.data(), local.data(), local.size(), (me + 1) % n);
  tessera::quiet();
  long old = tessera::atomic_fetch_add(counter.data(), 1L, 0);  // a ticket from PE 0's counter
  rt.barrier();
  const bool ok = buf.data()[1023] == (me + n - 1) % n + 0.5 && old >= 0 && old < n;
  std::printf("PE %d: ticket %ld, neighbour's data %s\n", me, old, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
