#!/usr/bin/env bash
# Includes only go down the layers (docs/design.md): base <- sync <- bootstrap <- transport <- pgas <- coll;
# kernel uses base/sync and pgas; coll/patterns uses only base; capi and tools see everything.
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
  [capi]="base sync bootstrap transport pgas coll kernel capi"
)
bad=0 checked=0
for layer in "${!allowed[@]}"; do
  [ -d "$root/src/$layer" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(echo "$line" | sed -E 's/.*#include "([a-z_]+)\/.*/\1/')
    checked=$((checked+1))
    ok=0
    for a in ${allowed[$layer]}; do [ "$inc" = "$a" ] && ok=1; done
    if [[ $file == */coll/patterns/* ]] && [ "$inc" != base ] && [ "$inc" != coll ]; then ok=0; fi
    if [ $ok = 0 ]; then echo "FAIL ${file#$root/}: layer '$layer' includes '$inc/'"; bad=$((bad+1)); fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$root/src/$layer" --include='*.h' --include='*.cc' --include='*.hpp' | grep -vE '#include "(tessera|hwy)/')
done
echo "$checked includes checked"
echo "$((checked-bad)) passed, $bad failed"
[ $bad -eq 0 ]
