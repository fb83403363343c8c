#!/usr/bin/env bash
# Dependencies only go down the layers (docs/design.md): base <- sync <- bootstrap <- transport <- pgas <- coll;
# kernel uses base/sync/bootstrap/transport/pgas (not coll); moe and gnn use those and kernel; fused uses
# those and coll; coll/patterns uses only base; capi sees everything
# (tools/ is not checked: it sits above the library). The rule has three parts:
#  1. `#include "layer/..."` names a layer the including layer may use (the table below).
#  2. A public header (`<shmem.h>`, `<tessera/coll.hpp>`, also spelt "tessera/...") counts as the layer that
#     defines its functions (the map below), and is judged like that layer's own headers. Headers with only
#     types and macros (shmem_types.h, version.h, error.hpp, needs_cxx20.hpp, dtypes.h) count as base. A header
#     declaring functions of a higher layer may not be included "for its types": the types a lower layer
#     needs come in through a header it may include (coll.hpp brings coll.h's handle types to coll). Every
#     public header must be listed, so a new one needs a decision here.
#  3. No call goes up: outside capi, src/ calls none of the C entry points capi defines (shmem_*, shmemx_*,
#     aclshmem_*, tessera[A-Z]*, and the deprecated _my_pe/_num_pes/shmalloc/shfree/...). A C++ call upward
#     needs its declaration, which part 2 keeps out; C declarations leak in through headers a layer may
#     include (coll.hpp includes coll.h, which includes shmem.h), hence this separate check.
#  4. Inside transport, the TCP record does not include the UCX record (part 4 below).
#  5. Inside coll, only the files that make communicators (comm.cc, hier.cc) and the C handles (handle.cc)
#     include pgas/: the algorithms reach peers' memory and message paths through what the communicator
#     copied at creation (Communicator::sym, Hier::msg), never through pgas::remote or the runtime.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
declare -A allowed=(
  [base]="base"
  [sync]="base sync"
  [bootstrap]="base sync bootstrap"
  [transport]="base sync bootstrap transport"
  [pgas]="base sync bootstrap transport pgas"
  [coll]="base sync bootstrap transport pgas coll"
  [kernel]="base sync bootstrap transport pgas kernel"
  [moe]="base sync bootstrap transport pgas kernel moe"
  [gnn]="base sync bootstrap transport pgas kernel gnn"
  [fused]="base sync bootstrap transport pgas coll fused"
  [capi]="base sync bootstrap transport pgas coll kernel moe gnn fused capi"
)
# Public header (path under include/) -> the layer that defines its functions.
declare -A public=(
  [shmem.h]=capi [shmemx.h]=capi [aclshmem.h]=capi
  [tessera/shmem_extra.h]=capi [tessera/shmem_generic.h]=capi [tessera/tessera.hpp]=capi
  [tessera/coll.h]=capi [tessera/coll.hpp]=coll [tessera/kernel.hpp]=kernel [tessera/stream.hpp]=sync
  [tessera/moe.hpp]=moe [tessera/moe.h]=capi [tessera/kernel.h]=capi [tessera/gnn.hpp]=gnn [tessera/fused.hpp]=fused
  [tessera/shmem_types.h]=base [tessera/version.h]=base [tessera/error.hpp]=base
  [tessera/needs_cxx20.hpp]=base [tessera/dtypes.h]=base
)
bad=0 checked=0 calls=0
fail() { echo "FAIL $*"; bad=$((bad+1)); }

while IFS= read -r h; do
  [ -n "${public[$h]:-}" ] || fail "include/$h: public header not mapped to a layer in ${0##*/}"
done < <(cd "$root/include" && find . -name '*.h' -o -name '*.hpp' | sed 's|^\./||')

layers=(base sync bootstrap transport pgas coll kernel moe gnn fused capi)
for layer in "${layers[@]}"; do
  [ -d "$root/src/$layer" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    [[ $line =~ ^[^:]*:[0-9]+:#include\ [\<\"]([^\>\"]+) ]] || continue
    name=${BASH_REMATCH[1]}
    if [[ $name == */* ]] && [ -d "$root/src/${name%%/*}" ]; then
      inc=${name%%/*} what="'$inc/'"
    elif [ -n "${public[$name]:-}" ]; then
      inc=${public[$name]} what="<$name> (layer $inc)"
    else
      continue  # system and third-party headers
    fi
    checked=$((checked+1))
    ok=0
    for a in ${allowed[$layer]}; do [ "$inc" = "$a" ] && ok=1; done
    if [[ $file == */coll/patterns/* ]] && [ "$inc" != base ] && [ "$inc" != coll ]; then ok=0; fi
    [ $ok = 1 ] || fail "${file#$root/}: layer '$layer' includes $what"
  done < <(grep -rnE '^#include [<"]' "$root/src/$layer" --include='*.h' --include='*.cc' --include='*.hpp')
done

# Part 3: comments and string literals are removed first, so messages naming a routine do not count.
name='(shmemx?_[a-z0-9_]+|aclshmem_[a-z0-9_]+|tessera[A-Z][A-Za-z0-9_]*|_my_pe|_num_pes|shmalloc|shfree|shrealloc|shmemalign|start_pes|globalexit)[[:space:]]*\('
entry="(^|[^A-Za-z0-9_.>:])$name"
below=()
for layer in "${layers[@]}"; do [ "$layer" != capi ] && [ -d "$root/src/$layer" ] && below+=("$root/src/$layer"); done
while IFS= read -r line; do
  file=${line%%:*} rest=${line#*:} n=${rest%%:*} code=${rest#*:}
  [[ $code =~ ^[[:space:]]*\* ]] && continue  # inside a block comment
  if [[ $code =~ $entry ]]; then
    layer=${file#$root/src/}; layer=${layer%%/*}
    calls=$((calls+1))
    fail "${file#$root/}:$n: layer '$layer' calls ${BASH_REMATCH[2]} (defined in capi)"
  fi
done < <(grep -rnE "$name" "${below[@]}" --include='*.h' --include='*.cc' --include='*.hpp' |
         sed -E 's/"([^"\\]|\\.)*"/""/g; s|//.*||; s|/\*.*\*/||g')

# Part 4: inside the transport layer calls go one way: UCX writes on TCP's streams (transport/tcp/tcp.h),
# TCP calls UCX only through the Sink UCX registered, so nothing under transport/tcp includes transport/ucx.
# Above the layer, only the table (transport.h) and the shared-memory segments are seen, never a record's
# internals (headers of the fuzzers and unit tests of the wire checks are not under src/).
while IFS= read -r line; do
  fail "${line%%:*}: the TCP transport includes the UCX transport's internals (calls go one way)"
done < <(grep -rlE '#include "transport/ucx/' "$root/src/transport/tcp" 2>/dev/null | sed "s|^$root/||")
while IFS= read -r line; do
  fail "${line#$root/}: a layer above transport includes a record's internals"
done < <(grep -rnE '#include "transport/(ucx|tcp)/' "$root/src" --include='*.h' --include='*.cc' |
         grep -v "^$root/src/transport/")

# Part 5: the engine's data path does not reach into the PGAS runtime; communicator creation (comm.cc,
# grow.cc, which maps a replacement's segments), the hierarchy's set-up and the handles do.
while IFS= read -r line; do
  fail "${line#$root/}: the collective engine includes pgas/ outside comm.cc, grow.cc, hier.cc and handle.cc"
done < <(grep -rlE '#include "pgas/' "$root/src/coll" --include='*.h' --include='*.cc' |
         grep -vE "^$root/src/coll/(comm|grow|hier|handle)\.cc$")

echo "$checked includes checked, $calls calls up to capi found"
echo "$bad failed"
[ $bad -eq 0 ]
