// What tessera-run was asked to run: the parsed command line (cli.h) that a job (job.h, hosts_job.h) starts.
#pragma once
#include <string>
#include <vector>

namespace tessera::run {

struct Options {
  int n_pes = 1;
  bool tag_output = false;
  double timeout_s = 0;  // whole job; 0 = none
  std::string bind_to;  // auto | core | none; empty: TESSERA_BIND (default auto); placement.h
  bool report_bindings = false;
  // end | continue; empty: TESSERA_RESILIENT (1: continue, 0: end; default end). continue: a PE's failure
  // leaves the others running, and their calls on communicators it belonged to fail (docs/resilience.md).
  std::string on_failure;
  // With continue: how many replacement processes to start in all, one per failure, each under the failed
  // PE's number, for the survivors to grow back to (docs/resilience.md, "Growing back"). One host.
  int restarts = 0;
  std::vector<std::string> env;  // K=V
  std::vector<std::string> argv;
};

}  // namespace tessera::run
