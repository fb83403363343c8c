/* Checks of the C-compiled PE tests (compute_stream_c.c, kernel_ops_c.c): a failed check prints the PE, the
 * place, the condition and a message, and exits 1. The including file defines `static int me;` first. */
#ifndef TESSERA_TESTS_PE_C_CHECKS_H
#define TESSERA_TESTS_PE_C_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/coll.h>

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "PE %d: %s:%d: %s: ", me, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
      exit(1);                                                              \
    }                                                                       \
  } while (0)
#define OK(call) CHECK((call) == tesseraSuccess, "%s", tesseraGetLastError())

/* The call returned `want` and its message (tesseraGetLastError) contains `text`. */
static inline void expect_error(tesseraResult_t r, tesseraResult_t want, const char* text) {
  CHECK(r == want, "result %d, want %d (%s)", (int)r, (int)want, tesseraGetLastError());
  CHECK(strstr(tesseraGetLastError(), text) != NULL, "'%s' does not say '%s'", tesseraGetLastError(), text);
}

#endif /* TESSERA_TESTS_PE_C_CHECKS_H */
