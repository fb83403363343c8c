#!/usr/bin/env bash
# make mutants: plants each mutant of tests/mutants/list (a small deliberate bug) in a scratch copy of the
# tree, builds it incrementally and runs the tests that must catch it; prints a table of killed/survived.
# Not part of `make test` (it rebuilds once per mutant). Run it before resolving a change to the collective
# engine or the transports; every mutant must be killed. How to add one: docs/testing.md.
#
#   scripts/mutants.sh [name-regex]     only the mutants whose name matches
# Environment: MUTANTS_DIR (scratch, default /tmp/tessera-mutants: the copy in src/, its builds in build/
# and, for mutants that ThreadSanitizer must catch, build-tsan/, the logs in logs/), MUTANTS_LIST (default
# tests/mutants/list), JOBS (default nproc), MUTANT_TIMEOUT
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
logs=$work/logs
mkdir -p "$src" "$work/build" "$logs"

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

# The two builds of the scratch copy: release (every target) and tsan (the tsan preset's settings; only the
# targets its mutants' tests run, configured the first time a mutant needs it). Their tests run with the
# environment make test-tsan gives them.
build_dir() { if [ "$1" = tsan ]; then echo "$work/build-tsan"; else echo "$work/build"; fi; }
configured=""
configure() {  # configure() kind
  local b; b=$(build_dir "$1")
  case " $configured " in *" $1 "*) return 0 ;; esac
  echo "== configuring the scratch copy's $1 build in $b"
  if [ "$1" = tsan ]; then
    cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE_THREAD=ON -DTESSERA_TORCH=OFF \
      >"$logs/configure-$1.log" 2>&1 || { echo "configure failed: $logs/configure-$1.log"; exit 1; }
  else
    cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release >"$logs/configure-$1.log" 2>&1 ||
      { echo "configure failed: $logs/configure-$1.log"; exit 1; }
  fi
  configured+=" $1"
}
run_ctest() {  # run_ctest kind ctest-arguments... (within the time limit: 124 when it runs out)
  local kind=$1; shift
  if [ "$kind" = tsan ]; then
    (cd "$(build_dir tsan)" && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$src/tests/tsan.supp" \
       UCX_MEM_MMAP_HOOK_MODE=none timeout "$limit" ctest "$@")
  else
    (cd "$(build_dir release)" && timeout "$limit" ctest "$@")
  fi
}
# Targets whose binaries the tests matching $2 run in build $1 (every target when a script test is among them;
# pe/as_hosts.sh only runs the program it is given, which is named after it). Read from the CTestTestfiles,
# which name a test's binary before it is built (ctest --show-only leaves such a test's command out).
targets_for() {
  local b; b=$(build_dir "$1")
  python3 - "$b" "$2" <<'PY'
import os, re, sys
build, pattern = sys.argv[1], re.compile(sys.argv[2])
bindir = build + "/bin/"
names = set()
for root, _, files in os.walk(build):
    if "CTestTestfile.cmake" not in files:
        continue
    for line in open(os.path.join(root, "CTestTestfile.cmake")):
        m = re.match(r'add_test\(\[=\[(.*?)\]=\] (.*)\)$', line.strip())
        if not m or not pattern.search(m.group(1)):
            continue
        args = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2))
        if any(a.endswith(".sh") and not a.endswith("/pe/as_hosts.sh") for a in args):
            print("all")
            sys.exit()
        names.update(os.path.basename(a) for a in args if a.startswith(bindir))
print(" ".join(sorted(names)))
PY
}

# Parse the list into parallel arrays.
names=() files=() rules=() patches=() kills=() whats=() builds=()
flush() {
  if [ -n "${n:-}" ]; then
    names+=("$n"); files+=("${f:-}"); rules+=("${s:-}"); patches+=("${p:-}"); kills+=("${k:-}"); whats+=("${w:-}")
    builds+=("${b:-release}")
  fi
  n="" f="" s="" p="" k="" w="" b=""
}
n="" f="" s="" p="" k="" w="" b=""
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
    build) case "$val" in release|tsan) b=$val ;; *) echo "$list: build '$val' is neither release nor tsan"; exit 1 ;; esac ;;
    *) echo "$list: unknown key '$key' in: $line"; exit 1 ;;
  esac
done <"$list"
flush

# The tests must pass on the unchanged tree first, in each build: a test that already fails would "kill"
# every mutant.
for kind in release tsan; do
  selected=()
  for i in "${!names[@]}"; do
    [ "${builds[$i]}" = "$kind" ] || continue
    if [ -z "$only" ] || [[ ${names[$i]} =~ $only ]]; then selected+=("${kills[$i]}"); fi
  done
  [ "${#selected[@]}" -gt 0 ] || continue
  all_kill=$(printf '%s\n' "${selected[@]}" | sort -u | paste -sd '|')
  configure "$kind"
  if [ "$kind" = tsan ]; then
    echo "== building the scratch copy's tsan build (the targets of $all_kill)"
    tg=$(targets_for tsan "$all_kill")
    if [ "$tg" = all ]; then tg=""; else tg="--target tessera-run $tg"; fi
    # shellcheck disable=SC2086
    cmake --build "$(build_dir tsan)" -j "$jobs" $tg \
      >"$logs/build-tsan.log" 2>&1 || { echo "build failed: $logs/build-tsan.log"; exit 1; }
  else
    echo "== building the scratch copy in $(build_dir release)"
    cmake --build "$(build_dir release)" -j "$jobs" >"$logs/build.log" 2>&1 || { echo "build failed: $logs/build.log"; exit 1; }
  fi
  echo "== the unchanged tree ($kind): tests matching $all_kill"
  if ! run_ctest "$kind" -R "$all_kill" -j "$jobs" --output-on-failure >"$logs/baseline-$kind.log" 2>&1; then
    echo "   they fail without any mutant (log: $logs/baseline-$kind.log): fix the tree first"
    exit 1
  fi
done

results=() status=0
record() { results+=("$name"$'\t'"$kill"$'\t'"$1"$'\t'"$2"); }
for i in "${!names[@]}"; do
  name=${names[$i]} file=${files[$i]} kill=${kills[$i]} kind=${builds[$i]}
  build=$(build_dir "$kind")
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
  tg=$(targets_for "$kind" "$kill")
  if [ "$tg" = all ]; then tg=""; else tg="--target tessera-run $tg"; fi
  # shellcheck disable=SC2086
  if ! cmake --build "$build" -j "$jobs" $tg >"$logs/$name.build.log" 2>&1; then
    echo "   build failed: $logs/$name.build.log"
    record "BUILD FAILED" "$(($(date +%s) - t0))"; status=1; restore; continue
  fi
  # run the tests that must catch it; the first failure is enough (fail fast inside each program too)
  set +e
  # (-V: the programs' output in full, so that a test that skipped instead of running is seen below)
  GTEST_FAIL_FAST=1 run_ctest "$kind" -R "$kill" -j "$jobs" --stop-on-failure --output-on-failure -V \
    >"$logs/$name.test.log" 2>&1
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
