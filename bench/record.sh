# Sourced by the side-by-side bench drivers (bench/moe, bench/gnn, bench/fused). Needs $out (a scratch
# directory) and $res (the JSON-lines file) set, and `status` initialised by the caller.
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
