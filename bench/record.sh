# Sourced by the side-by-side bench drivers (bench/moe, bench/gnn, bench/fused), with $here set to the
# driver's directory.
#
# bench_dirs NAME [build-dir] [out-dir]: installs the peers if missing (scripts/install-deps.sh bench: Open
# MPI's compilers and headers, matplotlib), sets build (default: the repository's build/), out (default
# <build>/bench-NAME, created) and res (<out>/NAME.jsonl, emptied), and status=0.
bench_dirs() {
  local name=$1
  bash "$here/../../scripts/install-deps.sh" bench
  build="$(cd "${2:-$here/../../build}" && pwd)"
  out="${3:-$build/bench-$name}"
  mkdir -p "$out"
  res="$out/$name.jsonl"
  : > "$res"
  status=0
}

# record VARIANT COMMAND...: runs the command, appends its JSON line tagged with "variant" (the binding a peer
# ran with, say) to $res; on failure prints the command and the last lines of its error output and sets
# status=1, so one failed run does not end the comparison.
record() {
  local tag=$1
  shift
  local line
  if line=$("$@" 2> "$out/last.err" | grep '^{'); then
    echo "${line%\}},\"variant\":\"$tag\"}" >> "$res"
  else
    echo "!! failed: $*" >&2
    tail -3 "$out/last.err" >&2
    status=1
  fi
}
