/* Standalone main for building rma_bench.c with another OpenSHMEM's compiler wrapper (oshcc). */
#include "rma_bench.h"
int main(int argc, char** argv) { return rma_bench_main(argc, argv); }
