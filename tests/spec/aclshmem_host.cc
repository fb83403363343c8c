// Host code in the style of CANN SHMEM samples (aclshmem.h), built with tessera-c++: init with attributes,
// symmetric allocation, typed put/get, put-with-signal, team split and barrier, finalize.
#include <aclshmem.h>
#include <shmemx.h>

#include <cstdio>
#include <cstring>

int main() {
  aclshmemx_init_attr_t attr;
  // A CANN program gets its rank and size from its own launcher; under tessera-run, ask the runtime.
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  aclshmemx_set_attr(me, n, 64ull << 20, "tcp://127.0.0.1:8998", &attr);
  int errors = 0;
  if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) errors++;
  if (aclshmemx_init_status() != ACLSHMEM_STATUS_IS_INITIALIZED) errors++;
  auto* buf = static_cast<float*>(aclshmem_malloc(16 * sizeof(float)));
  auto* sig = static_cast<uint64_t*>(aclshmem_calloc(1, sizeof(uint64_t)));
  float mine[16];
  for (int i = 0; i < 16; ++i) mine[i] = me * 100.0f + i;
  aclshmem_barrier_all();
  aclshmem_put_float_mem(buf, mine, 16, (me + 1) % n);
  aclshmem_putmem_signal(buf, mine, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, (me + 1) % n);
  aclshmem_signal_wait_until(sig, ACLSHMEM_CMP_EQ, 1);
  int from = (me + n - 1) % n;
  for (int i = 0; i < 16; ++i)
    if (buf[i] != from * 100.0f + i) errors++;
  aclshmem_team_t x, y;
  if (aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 2, &x, &y) != 0) errors++;
  if (aclshmem_team_n_pes(x) + 0 < 1 || aclshmem_team_my_pe(x) != me % 2) errors++;
  aclshmem_barrier(y);
  aclshmem_team_destroy(x);
  aclshmem_team_destroy(y);
  if (aclshmem_int32_g(reinterpret_cast<int32_t*>(buf), me) != *reinterpret_cast<int32_t*>(buf)) errors++;
  double t0 = shmemx_wtime();
  if (!(t0 > 0)) errors++;
  aclshmem_free(buf);
  aclshmem_free(sig);
  if (errors) std::fprintf(stderr, "PE %d: %d errors\n", me, errors);
  aclshmem_finalize();
  shmem_finalize();  // pairs with the shmem_init above (init is reference counted)
  return errors != 0;
}
