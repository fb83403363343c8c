// tessera-perf rma: the OSU-style one-sided benchmark of bench/rma/rma_bench.c (the same source is built
// with another OpenSHMEM's oshcc by bench/rma_vs_oshmem.sh, so both sides run identical code).
#include "perf/perf.h"

extern "C" int rma_bench_main(int argc, char** argv);

namespace {
const tessera::perf::Registrar kReg{"rma", "one-sided put/get/atomic latency and bandwidth (OSU style)",
                                    &rma_bench_main};
}  // namespace
