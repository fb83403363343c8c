// The launcher <-> agent channel (tools/run/agent_wire.h): every payload either end reads, as the agent
// (agent.cc: kJob, kStart, kSignal) and the launcher (hosts_job.cc: kHello, kPort, kOutput, kExit, kError)
// read it, field by field with a Reader. Input: one byte picks the message, the rest is its payload.
// Properties: a payload read whole (ok_and_done) is exactly what the Writer makes of the values read; a
// decoded job description holds its invariants (a program, 1.. PEs inside the job) and encodes back to the
// same bytes; no read goes past the payload, whatever its lengths say (ASan).
#include <string>
#include <vector>

#include "agent_wire.h"
#include "fuzz.h"

namespace run = tessera::run;

namespace {
// One payload layout: the fields in order, u32 ('u'), i32 ('i'), string ('s'), string list ('l').
constexpr const char* kLayouts[] = {
    "us",   // kHello   {protocol, version}
    "u",    // kPort    {port}
    "s",    // kStart   {bootstrap}
    "uus",  // kOutput  {rank, stream, bytes}
    "uiu",  // kExit    {rank, wait status, by_agent}
    "s",    // kError   {text}
    "u",    // kSignal  {signo}
    "ll",   // two lists, as a job description ends
};

void read_layout(const std::vector<char>& payload, const char* layout) {
  run::Reader r(payload);
  run::Writer w;
  for (const char* c = layout; *c; ++c) {
    switch (*c) {
      case 'u': w.u32(r.u32()); break;
      case 'i': w.i32(r.i32()); break;
      case 's': w.str(r.str()); break;
      case 'l': w.strs(r.strs()); break;
    }
  }
  if (r.ok_and_done()) FUZZ_CHECK(w.bytes() == payload);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<char> payload(reinterpret_cast<const char*>(data) + 1, reinterpret_cast<const char*>(data) + size);
  const uint8_t which = data[0] % 9;
  if (which < 8) {
    read_layout(payload, kLayouts[which]);
    return 0;
  }
  const std::optional<run::JobSpec> j = run::decode_job(payload);
  if (!j) return 0;
  FUZZ_CHECK(!j->argv.empty() && j->n_ranks >= 1 && j->size >= 1);
  FUZZ_CHECK(j->first_rank < j->size && j->n_ranks <= j->size - j->first_rank);
  FUZZ_CHECK(run::encode_job(*j) == payload);
  return 0;
}
