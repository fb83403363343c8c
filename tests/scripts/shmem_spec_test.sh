#!/bin/bash
# Programs after the OpenSHMEM specification's examples (tests/spec): compiled by tessera-cc / tessera-c++
# exactly as users compile OpenSHMEM programs, run by tessera-run at 1, 2, 3 and 4 PEs. Each program checks
# its own results and exits non-zero on a mismatch.
#   bash shmem_spec_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
src=$(cd "$(dirname "$0")/../spec" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

for f in "$src"/*.c "$src"/*.cc; do
  name=$(basename "$f")
  exe="$work/${name%.*}"
  case "$f" in
    *.c) cc="$build/bin/tessera-cc -std=c11 -O1 -Wall -Wextra -Werror -Wno-unused-parameter" ;;
    *) cc="$build/bin/tessera-c++ -O1 -Wall -Werror" ;;
  esac
  if ! $cc "$f" -o "$exe" 2> "$work/cc.log"; then
    echo "FAIL: $name does not compile:"; cat "$work/cc.log"; fail=1; continue
  fi
  for n in 1 2 3 4; do
    if ! "$build/bin/tessera-run" -n $n --timeout 60 "$exe" > "$work/out.log" 2>&1; then
      echo "FAIL: $name at $n PEs:"; tail -20 "$work/out.log"; fail=1
    fi
  done
done
# The generic names reject a pointer type the specification does not list, at compile time.
printf '#include <shmem.h>\nstruct s { int a; };\nint main(void) { static struct s x; shmem_atomic_inc(&x, 0); return 0; }\n' > "$work/bad.c"
if "$build/bin/tessera-cc" -std=c11 "$work/bad.c" -o "$work/bad" 2> "$work/cc.log"; then
  echo "FAIL: shmem_atomic_inc on a struct compiled"; fail=1
elif ! grep -q tessera_c11_type_error "$work/cc.log"; then
  echo "FAIL: unexpected diagnostic for a bad generic argument:"; cat "$work/cc.log"; fail=1
fi
[ $fail = 0 ] && echo "all spec example programs passed"
exit $fail
