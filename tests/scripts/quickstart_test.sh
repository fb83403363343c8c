#!/usr/bin/env bash
# The README's quick starts are the files of examples/quickstart/, and each works:
#  1. every ```c and ```c++ block of README.md is, line for line, one file of examples/quickstart/
#     (the README shows what the tests run);
#  2. each file builds with the build's tessera-cc / tessera-c++ with warnings as errors, and runs with
#     the result it checks itself ("ok" on every PE, exit 0): under tessera-run at 1 and 3 PEs, and
#     coll_uid.c (the start-up under one's own launcher) under examples/quickstart/own_launcher.sh, at 1
#     and 3 processes, with no tessera-run anywhere.
# (Built against the installed package three ways: install_readme_test.sh.)
#   bash quickstart_test.sh <build-dir>
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
qs=$repo/examples/quickstart
# shellcheck source=lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

# 1. README blocks = files.
mkdir -p "$tmp/readme"
awk -v dir="$tmp/readme" '
  /^```(c|c\+\+)$/ { n++; f = dir "/block" n; next }
  /^```/           { f = ""; next }
  f != ""          { print > f }
' "$repo/README.md"
blocks=$(ls "$tmp/readme" 2>/dev/null | sort -V)
check "README.md has C and C++ blocks ($(echo $blocks | wc -w))" "[ -n '$blocks' ]"
for b in $blocks; do
  match=
  for f in "$qs"/*.c "$qs"/*.cc; do cmp -s "$tmp/readme/$b" "$f" && match=$(basename "$f"); done
  check "README $b ($(head -c 60 "$tmp/readme/$b" | tr '\n' ' ')...) is a file of examples/quickstart (${match:-none})" \
    "[ -n '$match' ]"
done

# 2. Build and run each file.
ran() {  # ran NAME N LOG RC: N lines ending in ok, none WRONG, exit 0
  [ "$4" -eq 0 ] && [ "$(grep -c ' ok$\|(ok)$' "$3")" -eq "$2" ] && ! grep -q WRONG "$3"
}
for f in "$qs"/*.c "$qs"/*.cc; do
  name=$(basename "$f"); exe=$tmp/${name%.*}
  case "$f" in *.c) cc=$build/bin/tessera-cc ;; *) cc=$build/bin/tessera-c++ ;; esac
  if ! "$cc" -O1 -Wall -Wextra -Werror "$f" -o "$exe" 2> "$tmp/cc.log"; then
    check "$name builds with $(basename "$cc") -Wall -Wextra -Werror: $(head -5 "$tmp/cc.log")" false
    continue
  fi
  check "$name builds with $(basename "$cc") -Wall -Wextra -Werror" true
  for n in 1 3; do
    if [ "$name" = coll_uid.c ]; then
      cmd=("$qs/own_launcher.sh" "$n" "$exe") lines=$n
    elif grep -q 'shmem_init\|tessera::Runtime' "$f"; then
      cmd=("$build/bin/tessera-run" -n "$n" --timeout 60 "$exe") lines=$n
    else
      [ "$n" -eq 1 ] || continue
      cmd=("$exe") lines=1
    fi
    timeout 90 "${cmd[@]}" > "$tmp/run.log" 2>&1; rc=$?
    check "$name: $(basename "${cmd[0]}") $n: exit 0 and $lines ok lines (rc $rc: $(tail -3 "$tmp/run.log" | tr '\n' ' '))" \
      "ran '$name' $lines '$tmp/run.log' $rc"
  done
done
# The own launcher passes a failing status on.
printf '#!/bin/sh\n[ "$TESSERA_RANK" != 1 ] || exit 3\n' > "$tmp/fail1"; chmod +x "$tmp/fail1"
timeout 30 "$qs/own_launcher.sh" 3 "$tmp/fail1"; rc=$?
check "own_launcher.sh exits with a failing process's status (rc $rc)" "[ $rc -eq 3 ]"
check "no shared-memory object is left" "[ -z \"\$(leftovers)\" ]"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
