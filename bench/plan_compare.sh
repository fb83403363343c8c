#!/usr/bin/env bash
# What persistent plans save (coll.h: tesseraAllReduceInit + tesseraStart against tesseraAllReduce, and the
# same for broadcast): bench/plan_cost.c at 2 and 4 PEs, the one-shot call and the plan's start alternated
# round by round in one run; then the instructions per call of each form at 1 PE under callgrind (no peer to
# wait for, so the count is the call's own fixed cost).
#   bash bench/plan_compare.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bash "$root/scripts/install-deps.sh" bench >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/bin/tessera-cc" -O2 "$root/bench/plan_cost.c" -o "$out/plan_cost"
echo "== time per call: median of 7 alternated rounds, the slowest PE"
for n in 2 4; do
  iters=$((n == 2 ? 20000 : 5000))
  "$build/bin/tessera-run" -n "$n" "$out/plan_cost" "$iters" 7
done
echo "== instructions per call at 1 PE (callgrind, 2000 calls)"
for coll in allreduce broadcast; do
  for bytes in 8 65536; do
    line="$coll $bytes B:"
    for form in oneshot plan; do
      fn=$([ "$form" = plan ] && echo tesseraStart || echo "tessera$([ "$coll" = allreduce ] && echo AllReduce || echo Broadcast)")
      "$build/bin/tessera-run" -n 1 --env PLAN_COST_ONLY=$form --env PLAN_COST_BYTES=$bytes --env PLAN_COST_COLL=$coll \
        valgrind --tool=callgrind --callgrind-out-file="$out/cg.$form" --toggle-collect="$fn" "$out/plan_cost" 2000 1 \
        >/dev/null 2>"$out/vg.log" || { cat "$out/vg.log" >&2; exit 1; }
      ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/vg.log")
      line+=" $form $((ir / 2000))"
      eval "ir_$form=$ir"
    done
    echo "$line  plan/one-shot $(python3 -c "print(f'{$ir_plan / $ir_oneshot:.2f}')")"
  done
done
