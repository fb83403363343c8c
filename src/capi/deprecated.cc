// Names of earlier OpenSHMEM versions that old programs still call: start_pes/_my_pe/_num_pes, shmalloc and
// friends, the cache-management no-ops, and the pre-1.4 atomic names (shmem_int_finc, ...). Each forwards to
// its current routine, so argument checks and messages are the same. shmem_pcontrol is accepted and ignored.
#include <shmem.h>

#include <cstdlib>

extern "C" {

// Programs written for start_pes predate shmem_finalize and never call it: finalize at exit for them
// (a no-op when the program did call shmem_finalize).
void start_pes(int npes) {
  shmem_init();
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] { shmem_finalize(); });
  }
}
int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
void* shmalloc(size_t size) { return shmem_malloc(size); }
void shfree(void* ptr) { shmem_free(ptr); }
void* shrealloc(void* ptr, size_t size) { return shmem_realloc(ptr, size); }
void* shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }

// Caches are coherent on every machine Tessera runs on: nothing to invalidate or flush.
void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void* dest) {}
void shmem_set_cache_line_inv(void* dest) {}
void shmem_udcflush(void) {}
void shmem_udcflush_line(void* dest) {}

void shmem_pcontrol(int level, ...) {}

void shmem_wait_until(long* ivar, int cmp, long cmp_value) { shmem_long_wait_until(ivar, cmp, cmp_value); }
void shmem_wait(long* ivar, long cmp_value) { shmem_long_wait(ivar, cmp_value); }

#define TS_DEF_OLD_AMO_STD(T, N)                                                                              \
  T shmem_##N##_cswap(T* dest, T cond, T value, int pe) {                                                     \
    return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);                                            \
  }                                                                                                           \
  T shmem_##N##_finc(T* dest, int pe) { return shmem_##N##_atomic_fetch_inc(dest, pe); }                      \
  void shmem_##N##_inc(T* dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }                                \
  T shmem_##N##_fadd(T* dest, T value, int pe) { return shmem_##N##_atomic_fetch_add(dest, value, pe); }      \
  void shmem_##N##_add(T* dest, T value, int pe) { shmem_##N##_atomic_add(dest, value, pe); }
#define TS_DEF_OLD_AMO_EXT(T, N)                                                                              \
  T shmem_##N##_fetch(const T* source, int pe) { return shmem_##N##_atomic_fetch(source, pe); }               \
  void shmem_##N##_set(T* dest, T value, int pe) { shmem_##N##_atomic_set(dest, value, pe); }                 \
  T shmem_##N##_swap(T* dest, T value, int pe) { return shmem_##N##_atomic_swap(dest, value, pe); }
TESSERA_OLD_AMO_STD_TYPES(TS_DEF_OLD_AMO_STD)
TESSERA_OLD_AMO_EXT_TYPES(TS_DEF_OLD_AMO_EXT)

}  // extern "C"
