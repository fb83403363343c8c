#!/bin/bash
# The C++ API reference builds from the public headers without a Doxygen warning, and documents the classes
# users meet first (tessera::Runtime, tessera::coll::Comm, tessera::kernel::BlockContext) with their comments.
#   bash docs_api_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v doxygen > /dev/null || { echo "FAIL: doxygen is not installed (scripts/install-deps.sh installs it)"; exit 1; }
[ -f "$build/docs/Doxyfile" ] || { echo "FAIL: $build/docs/Doxyfile was not configured"; exit 1; }
passes=0 fails=0
if (cat "$build/docs/Doxyfile"; echo "OUTPUT_DIRECTORY = $work") | doxygen - > "$work/log" 2>&1; then
  passes=$((passes+1)); echo "ok   doxygen without warnings"
else
  fails=$((fails+1)); echo "FAIL doxygen"; sed 's/^/     | /' "$work/log"
fi
# page-text <file> <text>: the page exists and carries the header's comment.
page() {
  if [ -f "$work/html/$1" ] && grep -q "$2" "$work/html/$1"; then passes=$((passes+1)); echo "ok   $1"
  else fails=$((fails+1)); echo "FAIL $1 does not document: $2"; fi
}
page classtessera_1_1Runtime.html "initialises the PE on construction"
page classtessera_1_1kernel_1_1BlockContext.html "Grid-wide barrier"
page classtessera_1_1coll_1_1Comm.html "allreduce"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
