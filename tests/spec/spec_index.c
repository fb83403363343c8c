/* Every routine of the specification's index (spec_index.h) is declared by shmem.h and defined by the
 * library: this program takes the address of each, so a missing declaration fails to compile
 * (-Werror=implicit-function-declaration) and a missing definition fails to link. */
#include <shmem.h>
#include "check.h"
#include "spec_index.h"

typedef void (*routine_t)(void); /* the one function type every other converts to without a warning */
#define SPEC_ADDR(name) (routine_t)name,
#define SPEC_RMA(TYPE, N) SPEC_RMA_ROUTINES(SPEC_ADDR, N)
#define SPEC_SIZED(B) SPEC_SIZED_ROUTINES(SPEC_ADDR, B)
#define SPEC_AMO_STD(TYPE, N) SPEC_AMO_STD_ROUTINES(SPEC_ADDR, N)
#define SPEC_AMO_EXT(TYPE, N) SPEC_AMO_EXT_ROUTINES(SPEC_ADDR, N)
#define SPEC_AMO_BIT(TYPE, N) SPEC_AMO_BIT_ROUTINES(SPEC_ADDR, N)
#define SPEC_P2P(TYPE, N) SPEC_P2P_ROUTINES(SPEC_ADDR, N)
#define SPEC_RED_BIT(TYPE, N) SPEC_RED_BIT_ROUTINES(SPEC_ADDR, N)
#define SPEC_RED_MINMAX(TYPE, N) SPEC_RED_MINMAX_ROUTINES(SPEC_ADDR, N)
#define SPEC_RED_ARITH(TYPE, N) SPEC_RED_ARITH_ROUTINES(SPEC_ADDR, N)
#define SPEC_SCAN(TYPE, N) SPEC_SCAN_ROUTINES(SPEC_ADDR, N)
#define SPEC_TOALL_BIT(TYPE, N) SPEC_TOALL_BIT_ROUTINES(SPEC_ADDR, N)
#define SPEC_TOALL_MINMAX(TYPE, N) SPEC_TOALL_MINMAX_ROUTINES(SPEC_ADDR, N)
#define SPEC_TOALL_ARITH(TYPE, N) SPEC_TOALL_ARITH_ROUTINES(SPEC_ADDR, N)

static const routine_t routines[] = {
    SPEC_UNTYPED(SPEC_ADDR)
    SPEC_RMA_TYPES(SPEC_RMA)
    SPEC_SIZES(SPEC_SIZED)
    SPEC_AMO_STD_TYPES(SPEC_AMO_STD)
    SPEC_AMO_EXT_TYPES(SPEC_AMO_EXT)
    SPEC_AMO_BIT_TYPES(SPEC_AMO_BIT)
    SPEC_P2P_TYPES(SPEC_P2P)
    SPEC_RED_BIT_TYPES(SPEC_RED_BIT)
    SPEC_RED_MINMAX_TYPES(SPEC_RED_MINMAX)
    SPEC_RED_ARITH_TYPES(SPEC_RED_ARITH)
    SPEC_RED_MINMAX_TYPES(SPEC_SCAN)
    SPEC_TOALL_BIT_TYPES(SPEC_TOALL_BIT)
    SPEC_TOALL_MINMAX_TYPES(SPEC_TOALL_MINMAX)
    SPEC_TOALL_ARITH_TYPES(SPEC_TOALL_ARITH)
};

int main(void) {
  shmem_init();
  const size_t n = sizeof routines / sizeof routines[0];
  /* Compiling and linking is the test; a routine left undefined behind a weak declaration would be null. */
  for (size_t i = 0; i < n; i++) CHECK(routines[i] != NULL, "routine %zu of the index is null", i);
  if (shmem_my_pe() == 0) printf("%zu routines of the specification's index link\n", n);
  shmem_finalize();
  return spec_errors != 0;
}
