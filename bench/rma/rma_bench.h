/* The RMA benchmark's entry point (see rma_bench.c). */
#ifndef TESSERA_BENCH_RMA_BENCH_H
#define TESSERA_BENCH_RMA_BENCH_H
#ifdef __cplusplus
extern "C" {
#endif
int rma_bench_main(int argc, char** argv);
#ifdef __cplusplus
}
#endif
#endif
