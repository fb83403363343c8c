#!/bin/bash
# Tessera's C++ headers under a standard older than C++20 (a pkg-config user who left out
# --variable=cxxflags): each stops the compilation with one message saying C++20 is needed, and no error
# from inside the headers follows. Under C++20 each compiles.
#   bash cxx20_headers_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
include=$(cd "$(dirname "$0")/../../include" && pwd)
source "$(dirname "$0")/lib.sh"
cxx="$build/bin/tessera-c++"  # a -std= on the command line is the one it uses
want="error: #error \"Tessera's C++ headers (tessera/tessera.hpp) need C++20: compile with -std=c++20\""

# Whether the compiler's output $tmp/old.out, from a run that exited with $1, holds only the guard's two
# diagnostics: its message, then the missing header that ends the compilation.
stops_at_guard() {
  local errors; errors=$(grep -E ': (fatal )?error:' "$tmp/old.out")
  [ "$1" -ne 0 ] && [ "$(echo "$errors" | wc -l)" -eq 2 ] &&
    echo "$errors" | head -1 | grep -qF -- "$want" &&
    echo "$errors" | tail -1 | grep -qF "fatal error: tessera/compile-with-std=c++20"
}

for h in "$include"/tessera/*.hpp; do
  name=tessera/$(basename "$h")
  printf '#include <%s>\nint main() { return 0; }\n' "$name" > "$tmp/one.cc"
  "$cxx" -std=c++17 -c "$tmp/one.cc" -o "$tmp/one.o" > "$tmp/old.out" 2>&1; rc=$?
  check "$name under -std=c++17 stops with 'need C++20'" "stops_at_guard $rc"
  stops_at_guard $rc || sed 's/^/     | /' "$tmp/old.out"
  check "$name under -std=c++20 compiles" "'$cxx' -std=c++20 -c '$tmp/one.cc' -o '$tmp/one.o'"
done
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
