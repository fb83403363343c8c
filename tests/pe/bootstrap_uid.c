/* A job wired by the unique-id form of the TCP rendezvous (tessera_bootstrap_uid), as a program started by
 * its own launcher would do it: rank 0 makes the id and hands it to the others through a file.
 *   bootstrap_uid FILE         TESSERA_RANK=0 makes the id and writes FILE; the others wait for FILE (20 s)
 *   bootstrap_uid FILE make    make the id and write FILE whatever the rank, then shmem_init
 *   bootstrap_uid FILE read    read FILE whatever the rank, then shmem_init
 *   bootstrap_uid - small      tessera_bootstrap_uid with a buffer too small and with a null buffer
 * Every PE adds its number + 1 on PE 0 and checks the job's size against TESSERA_SIZE. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int make_id(const char* path) {
  char id[TESSERA_BOOTSTRAP_UID_SIZE];
  if (tessera_bootstrap_uid(id, sizeof id, "127.0.0.1") != 0) return 1;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (!f) return 1;
  fputs(id, f);
  fclose(f);
  if (rename(tmp, path) != 0) return 1; /* whole or absent for the readers */
  return setenv("TESSERA_BOOTSTRAP", id, 1);
}

static int read_id(const char* path) {
  char id[TESSERA_BOOTSTRAP_UID_SIZE] = {0};
  for (int i = 0; i < 2000; ++i) {
    FILE* f = fopen(path, "r");
    if (f) {
      size_t n = fread(id, 1, sizeof id - 1, f);
      fclose(f);
      if (n > 0) return setenv("TESSERA_BOOTSTRAP", id, 1);
    }
    usleep(10000);
  }
  fprintf(stderr, "no id in %s after 20 s\n", path);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argc > 2 ? argv[2] : "";
  if (strcmp(mode, "small") == 0) {
    char small[16];
    int a = tessera_bootstrap_uid(small, sizeof small, "127.0.0.1");
    int b = tessera_bootstrap_uid(NULL, 0, "127.0.0.1");
    printf("small buffer: %d, null buffer: %d\n", a, b);
    return a < 0 && b < 0 ? 0 : 1;
  }
  const char* rank = getenv("TESSERA_RANK");
  int maker = strcmp(mode, "make") == 0 || (strcmp(mode, "read") != 0 && rank && strcmp(rank, "0") == 0);
  if (maker ? make_id(argv[1]) : read_id(argv[1])) return 3;
  shmem_init();
  static long sum = 0;
  shmem_long_atomic_add(&sum, shmem_my_pe() + 1, 0);
  shmem_barrier_all();
  const char* size = getenv("TESSERA_SIZE");
  int ok = size && atoi(size) == shmem_n_pes() && rank && atoi(rank) == shmem_my_pe();
  if (shmem_my_pe() == 0) printf("sum %ld\n", sum);
  printf("pe %d of %d %s\n", shmem_my_pe(), shmem_n_pes(), ok ? "agrees" : "DISAGREES");
  shmem_finalize();
  return ok ? 0 : 1;
}
