#!/bin/bash
# Timeline tracing (TESSERA_TRACE, docs/design.md "Tracing"): a job of 2 PEs that does a large non-blocking
# put, a wait that has to sleep, bucketed allreduces on a comm stream with an event, and a kernel launch
# writes one file per PE; tessera-run merges them into trace.json, which must be valid JSON with one process
# track per PE, named threads, events of every category, non-negative durations and timestamps inside the
# run; tessera-info --trace-summary names the time sinks; --trace-merge redoes the merge alone. With
# TESSERA_TRACE unset the same job writes nothing.
#   bash trace_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
. "$(dirname "$0")/lib.sh"
run="$build/bin/tessera-run"
info="$build/bin/tessera-info"
py=/usr/bin/python3

cat > "$tmp/traced.cc" <<'CC'
#include <shmem.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include <tessera/coll.hpp>
#include <tessera/kernel.hpp>

namespace tc = tessera::coll;

int main() {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  int rc = 0;
  // rma: 1 MiB non-blocking put to the next PE, through the copy engine (TESSERA_COPY_ENGINE=always).
  const size_t bytes = size_t{1} << 20;
  char* dst = static_cast<char*>(shmem_malloc(bytes));
  std::vector<char> src(bytes, static_cast<char>(me + 1));
  shmem_putmem_nbi(dst, src.data(), bytes, (me + 1) % n);
  shmem_quiet();
  shmem_barrier_all();
  if (dst[bytes - 1] != static_cast<char>((me + n - 1) % n + 1)) rc = 1, std::printf("PE %d: put data wrong\n", me);
  // wait: PE 0 waits for a flag that PE 1 sets 30 ms later, long past the eager polls and the spin.
  long* flag = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  shmem_barrier_all();
  if (me == 1) {
    usleep(30000);
    shmem_long_p(flag, 1, 0);
  }
  if (me == 0) shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1);
  {
    // coll, stream, bucket: two buckets allreduced on a comm stream, then an event on it.
    tc::Comm comm = tc::Comm::world();
    tc::Stream stream;
    std::vector<float> g(size_t{1} << 17, 1.0f);
    tc::Bucketer buckets(comm, stream, size_t{256} << 10, tc::RedOp::kSum);
    buckets.add(g.data(), g.size() / 2, tc::DataType::kFloat32);
    buckets.add(g.data() + g.size() / 2, g.size() / 2, tc::DataType::kFloat32);
    buckets.mark_ready(1);
    buckets.mark_ready(0);
    buckets.finish();
    tc::Event e;
    e.record(stream);
    e.synchronize();
    if (g.front() != static_cast<float>(n) || g.back() != static_cast<float>(n))
      rc = 1, std::printf("PE %d: allreduce wrong: %g %g\n", me, g.front(), g.back());
  }
  // kernel: one launch of 2 blocks.
  std::vector<int> hit(2, 0);
  tessera::kernel::launch({.block_num = 2, .name = "trace_test_kernel"},
                          [&](tessera::kernel::BlockContext& b) { hit[b.block_idx()] = 1; });
  if (!hit[0] || !hit[1]) rc = 1, std::printf("PE %d: kernel blocks missing\n", me);
  shmem_free(flag);
  shmem_free(dst);
  shmem_finalize();
  return rc;
}
CC
"$build/bin/tessera-c++" -std=c++20 -O1 "$tmp/traced.cc" -o "$tmp/traced" || { echo "FAIL: traced.cc does not compile"; exit 1; }

# Traced job (TESSERA_TRACE given with -x, as a user would); monotonic clock read around it, in ns.
mono() { $py -c 'import time; print(time.monotonic_ns())'; }
t0=$(mono)
out=$(cd "$tmp" && timeout 120 "$run" -n 2 -x TESSERA_TRACE="$tmp/tr" -x TESSERA_COPY_ENGINE=always ./traced 2>&1)
rc=$?
t1=$(mono)
echo "$out" | sed 's/^/     | /'
check "traced job ends with 0" "[ $rc -eq 0 ]"
check "one file per PE" "[ \$(ls $tmp/tr/pe*.trace 2>/dev/null | wc -l) -eq 2 ]"
check "launcher says it merged" "echo \"\$out\" | grep -Eq 'tessera-run: trace of 2 PE\\(s\\), [0-9]+ events: .*/trace.json'"
check "trace.json written" "[ -s $tmp/tr/trace.json ]"

# The merged trace's contents, checked in Python (json must parse it).
cat > "$tmp/check.py" <<'PY'
import json, sys
t0, t1, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ev = json.load(open(path))["traceEvents"]
def check(name, ok):
    print(("ok   " if ok else "FAIL ") + name)
    return ok
good = True
xs = [e for e in ev if e["ph"] == "X"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
good &= check("one process track per PE (0, 1)", sorted(procs) == [0, 1] and all(v.startswith("PE ") for v in procs.values()))
good &= check("every event on a PE's track", all(e["pid"] in procs for e in ev))
names = set(threads.values())
good &= check("threads named: main, comm stream, copy engine, kernel block",
              "main" in names and any(n.startswith("comm stream") for n in names) and "copy engine" in names
              and any(n.startswith("kernel block") for n in names))
cats = {e["cat"] for e in xs}
for c in ["rma", "wait", "coll", "stream", "bucket", "kernel"]:
    good &= check("category %s recorded" % c, c in cats)
good &= check("durations non-negative", all(e["dur"] >= 0 for e in xs))
lo, hi = t0 / 1000.0, t1 / 1000.0
good &= check("timestamps inside the run", all(lo <= e["ts"] and e["ts"] + e.get("dur", 0) <= hi for e in ev if "ts" in e))
def has(cat, name, pred=lambda e: True):
    return any(e["cat"] == cat and e["name"] == name and pred(e) for e in xs)
good &= check("allreduce with its algorithm and bytes",
              has("coll", "allreduce", lambda e: e["args"].get("detail") and e["args"].get("bytes", 0) > 0))
calls = [e for e in xs if e["cat"] == "coll" and e["name"] != "step"]
steps = [e for e in xs if e["cat"] == "coll" and e["name"] == "step"]
def inside(s):  # microseconds with three decimals: allow the rounding of the last digit
    return any(c["pid"] == s["pid"] and c["tid"] == s["tid"] and c["ts"] - 0.002 <= s["ts"]
               and s["ts"] + s["dur"] <= c["ts"] + c["dur"] + 0.002 for c in calls)
good &= check("collective steps, each inside its call", len(steps) > 0 and all(inside(s) for s in steps))
good &= check("sleeping wait on PE 0", has("wait", "wait", lambda e: e["pid"] == 0 and e["args"]["detail"] == "sleep"
                                              and e["dur"] >= 10000))
good &= check("put_nbi of 1 MiB and quiet", has("rma", "put_nbi", lambda e: e["args"]["bytes"] == 1 << 20)
              and has("rma", "quiet"))
good &= check("bucket launches 0 and 1", {e["args"]["bucket"] for e in xs if e["name"] == "bucket launch"} == {0, 1})
good &= check("stream items and event wait", has("stream", "item") and has("stream", "event wait"))
good &= check("event record instants", any(e["ph"] == "i" and e["name"] == "event record" for e in ev))
good &= check("kernel launch and its 2 blocks", has("kernel", "launch", lambda e: e["args"]["detail"] == "trace_test_kernel")
              and {e["args"]["block"] for e in xs if e["name"] == "block" and e["pid"] == 0} == {0, 1})
sys.exit(0 if good else 1)
PY
check "trace.json contents" "$py $tmp/check.py $t0 $t1 $tmp/tr/trace.json"

summary=$("$info" --trace-summary "$tmp/tr/trace.json" 2>&1)
echo "$summary" | sed 's/^/     | /'
check "summary header: 2 PEs" "echo \"\$summary\" | grep -q '2 PE(s), traced time'"
check "summary names the sleeping wait" "echo \"\$summary\" | grep -Eq '^wait +wait \\(sleep\\) '"
check "summary names the allreduce" "echo \"\$summary\" | grep -Eq '^coll +allreduce \\('"
check "summary names the kernel launch" "echo \"\$summary\" | grep -Eq '^kernel +launch '"
check "summary sorted by total" "echo \"\$summary\" | awk 'NR>2 && /%\$/ {print \$(NF-3)}' | sort -g -r -c"
check "summary of a missing file fails" "! '$info' --trace-summary '$tmp/none.json' >/dev/null 2>&1"

# The merge alone (jobs started by another launcher) gives the same events.
mv "$tmp/tr/trace.json" "$tmp/first.json"
merged=$("$info" --trace-merge "$tmp/tr" 2>&1)
check "--trace-merge writes trace.json" "echo \"\$merged\" | grep -q 'trace of 2 PE(s)' && [ -s $tmp/tr/trace.json ]"
check "--trace-merge matches the launcher's merge" "cmp -s $tmp/first.json $tmp/tr/trace.json"
cp "$tmp/tr/pe0."*.trace "$tmp/tr/pe0.1.trace"
check "--trace-merge refuses two files of one PE" "! '$info' --trace-merge '$tmp/tr' >/dev/null 2>&1"

# Untraced: the same job writes no trace file anywhere it could (its directory, the cwd) and says nothing.
mkdir -p "$tmp/quiet"
out=$(cd "$tmp/quiet" && env -u TESSERA_TRACE timeout 120 "$run" -n 2 -x TESSERA_COPY_ENGINE=always ../traced 2>&1)
rc=$?
check "untraced job ends with 0" "[ $rc -eq 0 ]"
check "untraced job writes no file" "[ -z \"\$(ls -A $tmp/quiet)\" ]"
check "untraced job mentions no trace" "! echo \"\$out\" | grep -qi trace"

echo "trace_test: $passes passed, $fails failed"
[ $fails -eq 0 ]
