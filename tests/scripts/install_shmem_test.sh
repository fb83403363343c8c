#!/bin/bash
# The installed package: `cmake --install` into a temporary prefix, then build a small OpenSHMEM program out
# of tree three ways (find_package(Tessera), pkg-config, the installed tessera-cc), run each with the
# installed tessera-run, and check that the installed tree still works after being moved.
#   bash install_shmem_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
fail=0
die() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; die "cmake --install"; }
for f in include/shmem.h include/shmemx.h include/mpp/shmem.h include/aclshmem.h include/tessera/shmem_extra.h include/tessera/shmem_generic.h \
         bin/tessera-run bin/tessera-cc bin/tessera-c++ lib/cmake/Tessera/TesseraConfig.cmake \
         lib/pkgconfig/tessera.pc; do
  [ -e "$prefix/$f" ] || [ -e "$(echo "$prefix"/lib*/"${f#lib/}")" ] || die "$f was not installed"
done

mkdir -p "$work/app"
cat > "$work/app/hello.c" <<'C'
#include <shmem.h>
#include <stdio.h>
int main(void) {
  static long v, sum;
  shmem_init();
  v = shmem_my_pe() + 1;
  shmem_sum_reduce(SHMEM_TEAM_WORLD, &sum, &v, 1);
  int n = shmem_n_pes();
  if (shmem_my_pe() == 0) printf("sum %ld of %d PEs\n", sum, n);
  shmem_finalize();
  return sum == (long)n * (n + 1) / 2 ? 0 : 1;
}
C
cat > "$work/app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(hello C)
find_package(Tessera 0.1 REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE Tessera::tessera)
CM

run() {  # run <what> <exe>
  local out
  out=$("$prefix/bin/tessera-run" -n 3 --timeout 30 "$2" 2>&1) || { echo "$out"; echo "FAIL: $1 did not run"; fail=1; return; }
  echo "$out" | grep -q "sum 6 of 3 PEs" || { echo "$out"; echo "FAIL: $1 printed the wrong result"; fail=1; }
}

# 1. CMake package.
if cmake -S "$work/app" -B "$work/app/build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/cm.log" 2>&1 &&
   cmake --build "$work/app/build" > "$work/cm.log" 2>&1; then
  run "find_package(Tessera)" "$work/app/build/hello"
else
  cat "$work/cm.log"; echo "FAIL: out-of-tree CMake build"; fail=1
fi

# 2. pkg-config.
pcdir=$(dirname "$(find "$prefix" -name tessera.pc | head -1)")
if flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs tessera) &&
   cc "$work/app/hello.c" $flags -o "$work/hello_pc"; then
  run "pkg-config" "$work/hello_pc"
else
  echo "FAIL: pkg-config build"; fail=1
fi

# 3. Installed compiler wrapper, also after moving the whole prefix.
"$prefix/bin/tessera-cc" "$work/app/hello.c" -o "$work/hello_cc" && run "tessera-cc" "$work/hello_cc" || fail=1
mv "$prefix" "$work/moved"
prefix="$work/moved"
"$prefix/bin/tessera-cc" "$work/app/hello.c" -o "$work/hello_moved" && run "tessera-cc (moved prefix)" "$work/hello_moved" || fail=1
"$prefix/bin/tessera-cc" --showme -c x.c | grep -q -- "-I$prefix/include" || { echo "FAIL: --showme"; fail=1; }

# 4. The torch backend, when the build has it: installed beside the library, found by the installed tessera-run
#    (which puts it on PYTHONPATH) with the interpreter it was built for.
torch_py=$(sed -n 's/^TESSERA_TORCH_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
if [ -d "$build/python/tessera_torch" ] && [ -n "$torch_py" ]; then
  ls "$prefix"/lib*/tessera/python/tessera_torch/_C*.so >/dev/null 2>&1 || { echo "FAIL: tessera_torch was not installed"; fail=1; }
  cat > "$work/app/t.py" <<'PY'
import torch, torch.distributed as dist, tessera_torch
dist.init_process_group("tessera")
t = torch.full((4,), float(dist.get_rank() + 1))
dist.all_reduce(t)
assert tessera_torch.__file__.startswith(__import__("sys").argv[1]), tessera_torch.__file__
assert torch.equal(t, torch.full((4,), 3.0)), t
PY
  out=$(env -u PYTHONPATH "$prefix/bin/tessera-run" -n 2 --timeout 120 "$torch_py" "$work/app/t.py" "$prefix" 2>&1) ||
    { echo "$out"; echo "FAIL: the installed tessera_torch under the installed tessera-run"; fail=1; }
fi

[ $fail = 0 ] && echo "installed package works (find_package, pkg-config, tessera-cc, moved prefix, tessera_torch)"
exit $fail
