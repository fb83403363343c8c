/* Result checking shared by the spec example programs. */
#ifndef SPEC_CHECK_H
#define SPEC_CHECK_H
#include <stdio.h>
static int spec_errors = 0;
#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(),   \
              __FILE__, __LINE__, #cond);                                   \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
      spec_errors++;                                                        \
    }                                                                       \
  } while (0)
#endif
