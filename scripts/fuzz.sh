#!/usr/bin/env bash
# Runs every libFuzzer harness of tests/fuzz (built by `cmake --preset fuzz`; `make fuzz` does both) for
# FUZZ_SECONDS each on its corpus, FUZZ_JOBS at a time, and fails when any of them finds a crash, a leak, a
# timeout or a broken property, printing the input that does it.
#   scripts/fuzz.sh [BUILD_DIR [NAME...]]   BUILD_DIR defaults to build-fuzz; NAMEs default to every harness
#   FUZZ_SECONDS=600  each fuzzer's run          FUZZ_JOBS=2  fuzzers at once (each takes one CPU)
#   FUZZ_MERGE=1      afterwards, add to tests/fuzz/corpus/NAME the new inputs that reach new code
# The repository's corpus is only read: new inputs go to BUILD_DIR/fuzz/corpus/NAME, which later runs start
# from too. Logs: BUILD_DIR/fuzz/logs/NAME.log; reproducers: BUILD_DIR/fuzz/artifacts/NAME/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
shift || true
seconds=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-2}
merge=${FUZZ_MERGE:-0}
src=tests/fuzz
work=$build/fuzz

if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in "$build"/bin/fuzz_*; do [ -x "$f" ] && names+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
[ ${#names[@]} -gt 0 ] || { echo "fuzz: no harness in $build/bin (cmake --preset fuzz && cmake --build $build)" >&2; exit 1; }

mkdir -p "$work/logs" "$work/status"
# Leaks are errors (a parser that leaks on some input is a bug); UBSan's reports carry their stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local name=$1 bin=$build/bin/fuzz_$1
  local corpus=$work/corpus/$name artifacts=$work/artifacts/$name log=$work/logs/$name.log
  mkdir -p "$corpus" "$artifacts" "$src/corpus/$name"
  rm -f "$artifacts"/* "$work/status/$name"
  local dict=()
  [ -f "$src/$name.dict" ] && dict=(-dict="$src/$name.dict")
  local rc
  # The new inputs go to the first directory; the repository's seeds are read from the second. The bootstrap
  # server's refusals are printed for every refused input: dropped from the log, which would only grow.
  set +e
  "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$artifacts/" "$corpus" "$src/corpus/$name" 2>&1 \
    | grep -av '^tessera-run: refused a bootstrap connection' > "$log"
  rc=${PIPESTATUS[0]}
  set -e
  local runs cov
  runs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -aE '^#[0-9]+' "$log" | tail -1 | grep -aoE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[^ ]+' || true)
  local found
  found=$(ls "$artifacts" 2>/dev/null | head -1)
  if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
    echo "fuzz: $name FAILED (exit $rc) after ${runs:-?} runs; log $log" >&2
    grep -aE 'ERROR|SUMMARY|fuzz property failed|runtime error' "$log" | head -5 >&2 || true
    for a in "$artifacts"/*; do [ -e "$a" ] && echo "fuzz: reproduce: $bin $a" >&2; done
    echo fail > "$work/status/$name"
    return
  fi
  echo "fuzz: $name ok: ${runs:-?} runs in ${seconds} s, $cov"
  echo ok > "$work/status/$name"
  if [ "$merge" = 1 ]; then
    "$bin" -merge=1 "$src/corpus/$name" "$corpus" > "$work/logs/$name.merge.log" 2>&1
    echo "fuzz: $name: merged into $src/corpus/$name ($(ls "$src/corpus/$name" | wc -l) inputs)"
  fi
}

echo "fuzz: ${names[*]}: ${seconds} s each, $jobs at a time"
for name in "${names[@]}"; do
  [ -x "$build/bin/fuzz_$name" ] || { echo "fuzz: no harness $build/bin/fuzz_$name" >&2; exit 1; }
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$name" &
done
wait

failed=()
for name in "${names[@]}"; do
  [ "$(cat "$work/status/$name" 2>/dev/null)" = ok ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#names[@]} fuzzers ran ${seconds} s without a crash"
