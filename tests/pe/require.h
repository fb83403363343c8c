/* REQUIRE(cond, fmt, ...) for the C programs that scripts drive (the tests/scripts tests): on a false
 * condition, one line "<REQUIRE_PROGRAM>: PE <me>: FAILED <cond>: <message>" to stderr and exit 1. The
 * program defines REQUIRE_PROGRAM (a string) and an int `me` (its PE) before using it. */
#ifndef TESSERA_TESTS_PE_REQUIRE_H
#define TESSERA_TESTS_PE_REQUIRE_H
#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(cond, ...)                                                    \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s: PE %d: FAILED %s: ", REQUIRE_PROGRAM, me, #cond);  \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
      exit(1);                                                                \
    }                                                                         \
  } while (0)
#endif
