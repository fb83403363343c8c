#!/bin/bash
# The installed docs and examples, and: every C and C++ snippet of the README is a complete program that checks its own result: installed with
# `cmake --install` into a temporary prefix, each is built three ways (the installed tessera-cc/tessera-c++,
# find_package(Tessera), pkg-config) and run (under tessera-run -n 3 when it starts the OpenSHMEM runtime).
#   bash install_readme_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
readme="$(cd "$(dirname "$0")/../.." && pwd)/README.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
passes=0 fails=0
ok() { passes=$((passes+1)); echo "ok   $1"; }
bad() { fails=$((fails+1)); echo "FAIL $1"; [ -f "$2" ] && sed 's/^/     | /' "$2"; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
# The docs and the examples' sources are installed with the package.
for f in share/doc/Tessera/README.md share/doc/Tessera/openshmem.md share/doc/Tessera/coll.md \
         share/doc/Tessera/examples/ring_pass.c; do
  if [ -f "$prefix/$f" ]; then ok "installed $f"; else bad "$f was not installed"; fi
done
mkdir -p "$work/src"
# Fenced ```c and ```c++ blocks, in order: snippet1.c, snippet2.cc, ...
awk -v dir="$work/src" '
  /^```c\+\+$/ { n++; f = dir "/snippet" n ".cc"; next }
  /^```c$/     { n++; f = dir "/snippet" n ".c"; next }
  /^```/       { f = ""; next }
  f != ""      { print > f }
' "$readme"
snippets=$(ls "$work/src" | sort -V)
[ -n "$snippets" ] || { echo "FAIL: no C or C++ snippet found in $readme"; exit 1; }

own_launcher="$(dirname "$readme")/examples/quickstart/own_launcher.sh"
run() {  # run <label> <exe> <source>
  local cmd=("$2")
  grep -qE 'shmem_init|tessera::Runtime' "$3" && cmd=("$prefix/bin/tessera-run" -n 3 --timeout 60 "$2")
  # The start-up under one's own launcher (tessera_bootstrap_uid) runs under that launcher, not tessera-run.
  grep -q TESSERA_BOOTSTRAP "$3" && cmd=(timeout 60 "$own_launcher" 3 "$2")
  if "${cmd[@]}" > "$work/run.log" 2>&1; then ok "$1"; else bad "$1 (exit $?)" "$work/run.log"; fi
}

# 1. The installed compiler wrappers, warnings as errors.
for s in $snippets; do
  src="$work/src/$s" exe="$work/${s%.*}.wrap"
  case "$s" in *.c) cc="$prefix/bin/tessera-cc -std=c11" ;; *) cc="$prefix/bin/tessera-c++" ;; esac
  if $cc -O1 -Wall -Wextra -Werror "$src" -o "$exe" 2> "$work/cc.log"; then run "$s (tessera-cc/c++)" "$exe" "$src"
  else bad "$s does not compile with the installed wrapper" "$work/cc.log"; fi
done

# 2. find_package(Tessera): a project that sets no C++ standard of its own gets C++20 from the target.
{
  echo 'cmake_minimum_required(VERSION 3.20)'
  echo 'project(readme C CXX)'
  echo 'find_package(Tessera REQUIRED)'
  for s in $snippets; do
    echo "add_executable(${s%.*} src/$s)"
    echo "target_link_libraries(${s%.*} PRIVATE Tessera::tessera)"
  done
} > "$work/CMakeLists.txt"
if cmake -S "$work" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" > "$work/cm.log" 2>&1 &&
   cmake --build "$work/cm" -j 2 >> "$work/cm.log" 2>&1; then
  for s in $snippets; do run "$s (find_package)" "$work/cm/${s%.*}" "$work/src/$s"; done
else
  bad "find_package(Tessera) build of the snippets" "$work/cm.log"
fi

# 3. pkg-config; C++ adds the package's cxxflags (pkg-config has no per-language Cflags).
pcdir=$(dirname "$(find "$prefix" -name tessera.pc | head -1)")
export PKG_CONFIG_PATH="$pcdir"
for s in $snippets; do
  src="$work/src/$s" exe="$work/${s%.*}.pc"
  case "$s" in
    *.c) cmd="cc -std=c11 $src -o $exe $(pkg-config --cflags --libs tessera)" ;;
    *) cmd="c++ $(pkg-config --variable=cxxflags tessera) $src -o $exe $(pkg-config --cflags --libs tessera)" ;;
  esac
  if $cmd 2> "$work/cc.log"; then run "$s (pkg-config)" "$exe" "$src"
  else bad "$s does not compile with pkg-config's flags" "$work/cc.log"; fi
done
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
