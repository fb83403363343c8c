// One bad call per case: `pe_bad_input <case>`. tests/scripts/bad_input_test.sh runs each case and checks
// that the job fails with one clear message naming the value and the limit.
#include <shmem.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <tessera/coll.hpp>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string c = argv[1];
  if (c == "before_init") {
    long x = 0;
    shmem_long_p(&x, 1, 0);
    return 0;
  }
  if (c == "my_pe_before_init") return shmem_my_pe() < 0 ? 0 : 3;  // ends the job, as every routine does
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* sym = static_cast<long*>(shmem_malloc(64 * sizeof(long)));
  long local[64] = {};
  if (c == "pe_too_big") shmem_long_put(sym, local, 1, n);
  if (c == "pe_negative") shmem_long_get(local, sym, 1, -1);
  if (c == "dest_not_symmetric") shmem_long_put(local, sym, 1, 0);
  if (c == "source_not_symmetric") shmem_long_get(sym, local, 4, 0);
  if (c == "past_heap_end") shmem_putmem(sym, local, SIZE_MAX / 4, 0);
  if (c == "null_source") shmem_putmem(sym, nullptr, 8, 0);
  if (c == "count_overflow") shmem_long_put(sym, local, SIZE_MAX / 4, 0);
  if (c == "bad_cmp") shmem_long_wait_until(sym, 99, 0);
  if (c == "wait_not_symmetric") shmem_long_wait_until(local, SHMEM_CMP_EQ, 0);
  if (c == "misaligned_atomic") shmem_long_atomic_add(reinterpret_cast<long*>(reinterpret_cast<char*>(sym) + 3), 1, 0);
  if (c == "free_not_heap") shmem_free(local);
  if (c == "bad_signal_op") shmem_putmem_signal(sym, local, 8, reinterpret_cast<uint64_t*>(sym + 8), 1, 7, 0);
  if (c == "zero_stride") shmem_long_iput(sym, local, 0, 1, 4, 0);
  if (c == "ctx_after_destroy") {
    shmem_ctx_t ctx;
    shmem_ctx_create(0, &ctx);
    shmem_ctx_destroy(ctx);
    shmem_ctx_long_p(ctx, sym, 1, 0);
  }
  if (c == "invalid_team") shmem_team_sync(nullptr) == 0 ? (void)0 : (void)shmem_team_ptr(SHMEM_TEAM_INVALID, sym, 0);
  if (c == "alloc_size_mismatch") shmem_malloc(me == 0 ? 128 : 256);
  if (c == "barrier_hang") {
    shmem_barrier_all();                   // the program's barrier #1 (shmem_init and shmem_malloc made others)
    if (me == 0) shmem_barrier_all();      // #2: PE 1 never arrives
    else sleep(20);
  }
  if (c == "output_then_fatal") {
    // Fully buffered when stdout is a file or a pipe: the line must still reach it.
    std::printf("PE %d printed this before the error\n", me);
    if (me == 0) shmem_long_p(sym, 1, 1 << 20);  // PE out of range: a fatal error
    shmem_barrier_all();                         // the others end here when PE 0 ends the job
  }
  // An active set called again with a new pSync: the set's checks were passed and remembered, the new
  // pSync's are still made (null, then outside the symmetric heap).
  if (c == "psync_null_after_use" || c == "psync_private_after_use") {
    static long psync[SHMEM_BCAST_SYNC_SIZE];
    for (long& w : psync) w = SHMEM_SYNC_VALUE;
    long private_psync[SHMEM_BCAST_SYNC_SIZE];
    for (long& w : private_psync) w = SHMEM_SYNC_VALUE;
    shmem_barrier_all();  // every pSync is initialized before any PE uses one (specification)
    shmem_broadcast64(sym, sym + 8, 4, 0, 0, 0, n, psync);
    shmem_barrier_all();
    shmem_broadcast64(sym, sym + 8, 4, 0, 0, 0, n, c == "psync_null_after_use" ? nullptr : private_psync);
  }
  // OpenSHMEM team collectives whose members disagree: found with the call's first barrier.
  if (c == "team_root_mismatch") shmem_long_broadcast(SHMEM_TEAM_WORLD, sym, sym + 8, 4, me);
  if (c == "team_count_mismatch") shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sym, sym + 16, me == 0 ? 4 : 8);
  if (c == "team_routine_mismatch") {
    if (me == 0) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sym, sym + 16, 4);
    else shmem_long_max_reduce(SHMEM_TEAM_WORLD, sym, sym + 16, 4);
  }
  if (c == "alloc_align_mismatch") shmem_align(me == 0 ? 64 : 4096, 64);
  if (c == "free_mismatch") {
    void* a = shmem_malloc(64);
    void* b = shmem_malloc(64);
    shmem_free(me == 0 ? a : b);
  }
  if (c == "alloc_count_mismatch") {
    shmem_malloc(64);
    if (me == 0) shmem_barrier_all();  // PE 1's second allocation meets this barrier
    else shmem_malloc(64);
  }
  if (c == "heap_exhausted") {
    void* p = shmem_malloc(size_t{1} << 44);
    if (p == nullptr) {
      std::fprintf(stderr, "heap_exhausted: shmem_malloc returned null\n");
      shmem_finalize();
      return 3;
    }
  }
  if (c == "wait_timeout") shmem_long_wait_until(sym, SHMEM_CMP_EQ, 42);  // nobody ever writes 42
  if (c == "coll_hang") {
    // PE 1 never joins the second allreduce (an LL call): PE 0's deadline prints the flight recorder.
    tessera::coll::Comm comm = tessera::coll::Comm::world();
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    comm.allreduce(x, x, 8);
    if (me == 1) sleep(20);
    comm.allreduce(x, x, 8);
  }
  // A communicator reads the collective settings when it is created.
  if (c == "bad_stage_stores" || c == "bad_compress") tessera::coll::Comm comm = tessera::coll::Comm::world();
  // A Bucketer made without a window reads TESSERA_BUCKET_WINDOW_US.
  if (c == "bad_bucket_window" || c == "negative_bucket_window") {
    tessera::coll::Comm comm = tessera::coll::Comm::world();
    tessera::coll::Stream stream;
    tessera::coll::Bucketer bk(comm, stream);
  }
  if (c == "no_finalize" && me == n - 1) std::exit(0);
  if (c == "global_exit" && me == 0) shmem_global_exit(7);
  if (c == "wrong_secret") {
    // A process that knows the socket but not the secret must be refused.
    const char* path = std::getenv("TESSERA_JOB_SOCKET");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 4;
    struct { uint32_t type, len; char secret[64]; uint32_t rank; } hello{1, 68, {}, 0};
    std::memset(hello.secret, 'a', 64);
    if (write(fd, &hello, sizeof hello) != static_cast<ssize_t>(sizeof hello)) return 5;
    char buf[8];
    ssize_t r = read(fd, buf, sizeof buf);  // closed by the launcher: EOF
    std::fprintf(stderr, "wrong_secret: read returned %zd\n", r);
    shmem_finalize();
    return r == 0 ? 0 : 6;
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
