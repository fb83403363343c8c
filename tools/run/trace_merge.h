// Timeline traces (TESSERA_TRACE, src/base/trace.h): merging the PEs' files into one Chrome trace, and the
// summary of a merged trace's time sinks. Used by tessera-run after a job and by tessera-info
// (--trace-merge DIR for jobs started by another launcher, --trace-summary FILE).
//
// The merged file is Chrome's trace-event JSON ({"traceEvents": [...]}), which the Perfetto UI and
// chrome://tracing open: one process per PE (pid = PE number, named "PE n"), one track per thread (tid =
// the thread's Linux id, named as the library named it: main, comm stream N, copy engine, kernel block N),
// "X" events with ts and dur in microseconds (three decimals: the nanoseconds survive) on the hosts'
// CLOCK_MONOTONIC, "i" events for moments; args carry the detail (algorithm, phase, item) and the integer
// arguments (bytes, pe, step, ...). Written as a stream: memory does not grow with the trace.
#pragma once
#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::run {

// The trace directory a job started with `env` (K=V from -x, the last TESSERA_TRACE wins) or, failing
// that, the launcher's own environment: "" when tracing is off.
std::string job_trace_dir(const std::vector<std::string>& env);

// Merges trace files into DIR/trace.json. `pids` empty: every pe*.trace file of DIR (two files of the same
// PE are an error naming both: the directory holds more than one job); else only the files of those
// processes (tessera-run knows its PEs). *summary: one line saying what was written.
Status merge_traces(const std::string& dir, const std::vector<pid_t>& pids, std::string* summary);

// Prints the top time sinks of a merged trace to `out`: per (category, name), the count, total, mean and
// max duration and the share of the PEs' traced time (the sum over PEs of last end - first start), sorted
// by total. Nested spans (a collective's steps inside the collective) each count in full.
Status print_trace_summary(const std::string& file, std::FILE* out, size_t top = 25);

}  // namespace tessera::run
