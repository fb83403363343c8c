#!/usr/bin/env bash
# make mutants: plants each mutant of tests/mutants/list (a small deliberate bug) in a scratch copy of the
# tree, builds it incrementally and runs the tests that must catch it; prints a table of killed/survived.
# Not part of `make test` (it rebuilds once per mutant). Run it before resolving a change to the collective
# engine or the transports; every mutant must be killed. How to add one: docs/testing.md.
#
#   scripts/mutants.sh [name-regex]     only the mutants whose name matches
# Environment: MUTANTS_DIR (scratch, default /tmp/tessera-mutants: the copy in src/, its build in build/,
# the logs in logs/), MUTANTS_LIST (default tests/mutants/list), JOBS (default nproc), MUTANT_TIMEOUT
# (seconds for the tests of one mutant, default 900; a run that times out counts as killed: a hang is caught).
#
# Exit status: 0 when every mutant was killed; 1 when one survived, was not run (the tests that should catch
# it passed because one of them skipped), could not be applied (a rule that changes nothing is an error: the
# code it aimed at has moved) or did not build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
list=${MUTANTS_LIST:-$root/tests/mutants/list}
work=${MUTANTS_DIR:-/tmp/tessera-mutants}
jobs=${JOBS:-$(nproc)}
limit=${MUTANT_TIMEOUT:-900}
only=${1:-}
src=$work/src
build=$work/build
logs=$work/logs
mkdir -p "$src" "$build" "$logs"

# The file a mutant has changed, put back (with a new time, so the next build recompiles it) on any exit.
mutated=""
restore() {
  if [ -n "$mutated" ]; then
    cp "$root/$mutated" "$src/$mutated"
    touch "$src/$mutated"
    mutated=""
  fi
}
trap restore EXIT

# The scratch copy of the files git knows (tracked, or new and not ignored), by content: a file whose bytes
# differ is copied (with a new time: it is recompiled), an unchanged one keeps its time (the build stays
# incremental), a file gone from the tree goes from the copy.
(cd "$root" && git ls-files -co --exclude-standard) | sort >"$work/files.new"
while IFS= read -r f; do
  if [ -f "$root/$f" ] && ! cmp -s "$root/$f" "$src/$f"; then
    mkdir -p "$(dirname "$src/$f")"
    cp "$root/$f" "$src/$f"
  fi
done <"$work/files.new"
if [ -f "$work/files" ]; then
  comm -23 "$work/files" "$work/files.new" | while IFS= read -r f; do rm -f "$src/$f"; done
fi
mv "$work/files.new" "$work/files"
echo "== configuring and building the scratch copy in $build"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$logs/configure.log" 2>&1 ||
  { echo "configure failed: $logs/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" >"$logs/build.log" 2>&1 || { echo "build failed: $logs/build.log"; exit 1; }

# Targets whose binaries the tests matching $1 run (every target when a script test is among them).
targets_for() {
  (cd "$build" && ctest -R "$1" --show-only=json-v1) | python3 -c '
import json, os, sys
bindir = sys.argv[1]
names = set()
for t in json.load(sys.stdin)["tests"]:
    cmd = t.get("command", [])
    if any(c.endswith(".sh") for c in cmd):
        print("all"); sys.exit()
    for c in cmd:
        if c.startswith(bindir + "/"):
            names.add(os.path.basename(c))
print(" ".join(sorted(names)))' "$build/bin"
}

# Parse the list into parallel arrays.
names=() files=() rules=() patches=() kills=() whats=()
flush() {
  if [ -n "${n:-}" ]; then
    names+=("$n"); files+=("${f:-}"); rules+=("${s:-}"); patches+=("${p:-}"); kills+=("${k:-}"); whats+=("${w:-}")
  fi
  n="" f="" s="" p="" k="" w=""
}
n="" f="" s="" p="" k="" w=""
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    \#*) continue ;;
    "") flush; continue ;;
  esac
  key=${line%%[[:space:]]*}
  val=$(sed -E 's/^[a-z]+[[:space:]]+//' <<<"$line")
  case "$key" in
    name) n=$val ;;
    file) f=$val ;;
    sed) s+="${s:+$'\n'}$val" ;;
    patch) p=$val ;;
    kill) k=$val ;;
    what) w=$val ;;
    *) echo "$list: unknown key '$key' in: $line"; exit 1 ;;
  esac
done <"$list"
flush

# The tests must pass on the unchanged tree first: a test that already fails would "kill" every mutant.
selected=()
for i in "${!names[@]}"; do
  if [ -z "$only" ] || [[ ${names[$i]} =~ $only ]]; then selected+=("${kills[$i]}"); fi
done
if [ "${#selected[@]}" -gt 0 ]; then
  all_kill=$(printf '%s\n' "${selected[@]}" | sort -u | paste -sd '|')
  echo "== the unchanged tree: tests matching $all_kill"
  if ! (cd "$build" && timeout "$limit" ctest -R "$all_kill" -j "$jobs" --output-on-failure) >"$logs/baseline.log" 2>&1; then
    echo "   they fail without any mutant (log: $logs/baseline.log): fix the tree first"
    exit 1
  fi
fi

results=() status=0
record() { results+=("$name"$'\t'"$kill"$'\t'"$1"$'\t'"$2"); }
for i in "${!names[@]}"; do
  name=${names[$i]} file=${files[$i]} kill=${kills[$i]}
  [ -n "$only" ] && ! [[ $name =~ $only ]] && continue
  t0=$(date +%s)
  echo "== $name: ${whats[$i]}"
  if [ -z "$kill" ] || [ -z "$file" ]; then
    echo "   $list: $name needs a kill regex and the file it changes"; exit 1
  fi
  if (cd "$build" && ctest -N -R "$kill" | grep -q "^Total Tests: 0"); then
    record "NO TESTS MATCH" "0"; status=1; echo "   no test matches '$kill'"; continue
  fi
  # plant it
  if [ -n "${patches[$i]}" ]; then
    mutated=$file
    patch -s -p1 -d "$src" <"$root/tests/mutants/${patches[$i]}" || {
      record "PATCH FAILED" "0"; status=1; restore; continue; }
  else
    mutated=$file
    cp "$root/$file" "$src/$file"
    while IFS= read -r rule; do sed -i -e "$rule" "$src/$file"; done <<<"${rules[$i]}"
    if cmp -s "$root/$file" "$src/$file"; then
      echo "   ERROR: the sed rule changed nothing in $file (the code it aims at has moved?)"
      record "RULE CHANGED NOTHING" "0"; status=1; restore; continue
    fi
  fi
  diff -u "$root/$file" "$src/$file" | sed -n '4,$p' | grep '^[-+]' | sed 's/^/   /' || true
  tg=$(targets_for "$kill")
  if [ "$tg" = all ]; then tg=""; else tg="--target tessera-run $tg"; fi
  # shellcheck disable=SC2086
  if ! cmake --build "$build" -j "$jobs" $tg >"$logs/$name.build.log" 2>&1; then
    echo "   build failed: $logs/$name.build.log"
    record "BUILD FAILED" "$(($(date +%s) - t0))"; status=1; restore; continue
  fi
  # run the tests that must catch it; the first failure is enough (fail fast inside each program too)
  set +e
  # (-V: the programs' output in full, so that a test that skipped instead of running is seen below)
  (cd "$build" && GTEST_FAIL_FAST=1 timeout "$limit" ctest -R "$kill" -j "$jobs" --stop-on-failure \
     --output-on-failure -V) >"$logs/$name.test.log" 2>&1
  rc=$?
  set -e
  restore
  dt=$(($(date +%s) - t0))
  if [ "$rc" = 0 ]; then
    # A mutant the tests did not catch because the test that should have caught it skipped (GTEST_SKIP, a
    # skip return code, a missing prerequisite) was not tested at all: said so, and a failure like a survivor.
    skipped=$(grep -E '\[  SKIPPED \] [A-Za-z]|\*\*\*(Skipped|Not Run)' "$logs/$name.test.log" |
              sed -E 's/.*\[  SKIPPED \] ([^ ]+).*/\1/; s/.*Test +#[0-9]+: ([^ ]+) .*/\1/' | sort -u | head -3 | paste -sd ' ')
    if [ -n "$skipped" ]; then verdict="NOT RUN (skipped: $skipped)"; else verdict=SURVIVED; fi
    status=1
  elif [ "$rc" = 124 ]; then
    verdict="killed (timeout)"
  else
    by=$(grep -E '\*\*\*(Failed|Timeout|Exception)' "$logs/$name.test.log" | head -1 | sed -E 's/.*: ([^ ]+) \.+.*/\1/')
    verdict="killed by ${by:-?}"
  fi
  echo "   $verdict (${dt}s; log: $logs/$name.test.log)"
  record "$verdict" "$dt"
done

echo
echo "| mutant | tests run | result | seconds |"
echo "|---|---|---|---|"
for r in "${results[@]}"; do
  IFS=$'\t' read -r a b c d <<<"$r"
  echo "| $a | \`${b//|/\\|}\` | $c | $d |"
done | tee "$work/table.md"
exit "$status"
