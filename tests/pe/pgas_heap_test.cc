#include <cstring>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// The same allocation sequence gives the same offsets: PE 0's pointer arithmetic works on every PE.
TEST(Heap, SameOffsetsOnEveryPe) {
  void* a = shmem_malloc(100);
  void* b = shmem_align(4096, 10);
  void* c = shmem_malloc(0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 4096, 0u);
  EXPECT_EQ(c, nullptr);
  uintptr_t off[2] = {reinterpret_cast<uintptr_t>(b) - reinterpret_cast<uintptr_t>(a), 0};
  uintptr_t* root = static_cast<uintptr_t*>(shmem_malloc(sizeof(uintptr_t)));
  if (me() == 0) *root = off[0];
  shmem_barrier_all();
  EXPECT_EQ(shmem_ulong_g(reinterpret_cast<unsigned long*>(root), 0), off[0]);
  shmem_free(root);
  shmem_free(b);
  shmem_free(a);
}

TEST(Heap, CallocZeroesAndFreeReuses) {
  char* a = static_cast<char*>(shmem_malloc(1 << 20));
  std::memset(a, 0x5a, 1 << 20);
  shmem_free(a);
  char* z = static_cast<char*>(shmem_calloc(1 << 18, 4));
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z, a);  // first fit reuses the freed block
  size_t nonzero = 0;
  for (size_t i = 0; i < (1u << 20); ++i) nonzero += z[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  shmem_free(z);
}

TEST(Heap, ReallocKeepsContents) {
  int* p = static_cast<int*>(shmem_malloc(16 * sizeof(int)));
  for (int i = 0; i < 16; ++i) p[i] = i * me();
  int* blocker = static_cast<int*>(shmem_malloc(64));  // forces a move
  int* q = static_cast<int*>(shmem_realloc(p, 4096 * sizeof(int)));
  ASSERT_NE(q, nullptr);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(q[i], i * me());
  // The moved block is symmetric too.
  shmem_int_p(q + 4000, me(), (me() + 1) % npes());
  shmem_barrier_all();
  EXPECT_EQ(q[4000], (me() + npes() - 1) % npes());
  int* r = static_cast<int*>(shmem_realloc(q, 8 * sizeof(int)));
  EXPECT_EQ(r, q);  // shrinking stays in place
  EXPECT_EQ(r[7], 7 * me());
  shmem_free(r);
  shmem_free(blocker);
}

TEST(Heap, ExhaustionReturnsNullOnEveryPe) {
  void* huge = shmem_malloc(size_t{1} << 45);
  EXPECT_EQ(huge, nullptr);
  void* over = shmem_calloc(SIZE_MAX / 2, 4);
  EXPECT_EQ(over, nullptr);
  void* bad_align = shmem_align(3, 64);
  EXPECT_EQ(bad_align, nullptr);
  void* ok = shmem_malloc(64);  // the heap still works
  EXPECT_NE(ok, nullptr);
  shmem_free(ok);
}

TEST(Heap, MallocWithHintsAndFreeNull) {
  void* p = shmem_malloc_with_hints(256, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
  ASSERT_NE(p, nullptr);
  shmem_free(p);
  shmem_free(nullptr);
}

}  // namespace
