/* Barriers forever (or N rounds). With a path argument, PE 2 writes its pid there once running, so a test
 * can kill it in the middle of the loop. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  shmem_init();
  long rounds = argc > 2 ? atol(argv[2]) : -1;
  if (argc > 1 && argv[1][0] && shmem_my_pe() == 2) {
    FILE* f = fopen(argv[1], "w");
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
  for (long i = 0; rounds < 0 || i < rounds; ++i) shmem_barrier_all();
  shmem_finalize();
  return 0;
}
