/* Spec: shmem_init / shmem_my_pe / shmem_n_pes / shmem_info_get_* / shmem_finalize ("Hello World"). */
#include <shmem.h>
#include <string.h>
#include "check.h"

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  int major, minor;
  char name[SHMEM_MAX_NAME_LEN];
  shmem_info_get_version(&major, &minor);
  shmem_info_get_name(name);
  CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version %d.%d", major, minor);
  CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name %s", name);
  CHECK(me >= 0 && me < npes, "PE %d of %d", me, npes);
  CHECK(shmem_pe_accessible((me + 1) % npes), "next PE not accessible");
  printf("Hello from PE %d of %d (%s %d.%d)\n", me, npes, name, major, minor);
  shmem_finalize();
  return spec_errors != 0;
}
