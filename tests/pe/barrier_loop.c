/* Barriers forever (or N rounds). With a path argument, PE 2 writes its pid there once running, so a test
 * can kill it in the middle of the loop. With "fork" after the count, PE 2 first forks a child that sleeps
 * (60 s) holding everything it inherited, its pid in <path>.child: the child must not hide PE 2's death. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  shmem_init();
  long rounds = argc > 2 ? atol(argv[2]) : -1;
  if (argc > 1 && argv[1][0] && shmem_my_pe() == 2) {
    if (argc > 3 && strcmp(argv[3], "fork") == 0) {
      pid_t child = fork();
      if (child == 0) {
        sleep(60);
        _exit(0);
      }
      char path[4096];
      snprintf(path, sizeof path, "%s.child", argv[1]);
      FILE* c = fopen(path, "w");
      fprintf(c, "%d\n", (int)child);
      fclose(c);
    }
    FILE* f = fopen(argv[1], "w");
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
  for (long i = 0; rounds < 0 || i < rounds; ++i) shmem_barrier_all();
  shmem_finalize();
  return 0;
}
