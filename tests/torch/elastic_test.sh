#!/usr/bin/env bash
# The torch example keeps training after a rank dies (resilient mode, docs/resilience.md), with DDP and with
# FSDP2: 4 ranks under tessera-run --on-failure continue, rank 2 killed at step 12; the 3 survivors shrink the
# default group and go on (under FSDP2 rebuilding the dead rank's shards from its neighbour's copy). The model
# they recover with must equal, bit for bit, the one a run without the failure holds at step 12; and a fresh
# job of 3 ranks resumed from it must print the same losses as the survivors, bit for bit
# (TESSERA_DETERMINISTIC=1 in all). Then growing back: with --restarts 1 the launcher starts a replacement for
# rank 2, the survivors grow the group 6 steps after the recovery, the replacement takes the model from a
# survivor, and a fresh job of 4 ranks resumed from the grown state prints the same losses, bit for bit.
set -u
build=${1:?build dir}
py=${2:?python}
example="$(dirname "$0")/../../examples/torch/elastic_train.py"
run="$build/bin/tessera-run"
. "$(dirname "$0")/../scripts/lib.sh"

for mode in ddp fsdp2; do
  flag=
  [ $mode = fsdp2 ] && flag=--fsdp2
  "$run" -n 4 --on-failure continue --timeout 240 --env TESSERA_DETERMINISTIC=1 \
    "$py" "$example" 24 $flag --kill-rank 2 --kill-step 12 --save-at-recovery "$tmp/state.pt" > "$tmp/survivors" 2>&1
  rc=$?
  cat "$tmp/survivors"
  check "$mode: the survivors' job exits 0 ($rc)" "[ $rc -eq 0 ]"
  check "$mode: the launcher went on without PE 2" "grep -q 'the job went on without PE 2,' '$tmp/survivors'"
  check "$mode: 3 ranks recovered at step 12" "grep -q '^recovered: 3 ranks go on from step 12$' '$tmp/survivors'"
  check "$mode: the survivors trained to the last step" "grep -q '^step 23 loss .* ranks 3$' '$tmp/survivors'"
  check "$mode: 4 ranks before the failure" "grep -q '^step 11 loss .* ranks 4$' '$tmp/survivors'"

  "$run" -n 4 --timeout 240 --env TESSERA_DETERMINISTIC=1 "$py" "$example" 13 $flag --save-at 12 "$tmp/intact.pt" \
    > "$tmp/intact" 2>&1
  rc=$?
  check "$mode: the run without a failure exits 0 ($rc)" "[ $rc -eq 0 ]"
  "$py" - "$tmp/intact.pt" "$tmp/state.pt" > "$tmp/compare" 2>&1 <<'PY'
import sys
import torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a["step"] == b["step"] == 12, (a["step"], b["step"])
assert list(a["model"]) == list(b["model"]), (list(a["model"]), list(b["model"]))
for k in a["model"]:
    assert torch.equal(a["model"][k], b["model"][k]), f"{k} differs"
print("same model")
PY
  rc=$?
  cat "$tmp/compare"
  check "$mode: the recovered model equals the one without the failure at step 12, bit for bit ($rc)" "[ $rc -eq 0 ]"

  "$run" -n 3 --timeout 240 --env TESSERA_DETERMINISTIC=1 "$py" "$example" 24 $flag --resume "$tmp/state.pt" \
    > "$tmp/fresh" 2>&1
  rc=$?
  cat "$tmp/fresh"
  check "$mode: the fresh job of 3 ranks exits 0 ($rc)" "[ $rc -eq 0 ]"
  grep '^step' "$tmp/survivors" | awk '$2 >= 12' > "$tmp/a"
  grep '^step' "$tmp/fresh" > "$tmp/b"
  check "$mode: the survivors' losses from step 12 equal the fresh job's, bit for bit" \
    "[ -s '$tmp/a' ] && [ \$(wc -l < '$tmp/a') -eq 12 ] && diff '$tmp/a' '$tmp/b'"
  check "$mode: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
done
# Growing back (DDP).
"$run" -n 4 --on-failure continue --restarts 1 --timeout 240 --env TESSERA_DETERMINISTIC=1 \
  "$py" "$example" 30 --kill-rank 2 --kill-step 12 --grow-after 6 --save-at-grow "$tmp/grown.pt" > "$tmp/grown" 2>&1
rc=$?
cat "$tmp/grown"
check "grow: the job exits 0 ($rc)" "[ $rc -eq 0 ]"
check "grow: the launcher started a replacement for PE 2" \
  "grep -q 'started a replacement for PE 2 (incarnation 1' '$tmp/grown'"
check "grow: 3 ranks from step 12, 4 again from step 18" \
  "grep -q '^recovered: 3 ranks go on from step 12$' '$tmp/grown' && grep -q '^step 17 loss .* ranks 3$' '$tmp/grown' &&
   grep -q '^grown: 4 ranks go on from step 18$' '$tmp/grown' && grep -q '^step 29 loss .* ranks 4$' '$tmp/grown'"
"$run" -n 4 --timeout 240 --env TESSERA_DETERMINISTIC=1 "$py" "$example" 30 --resume "$tmp/grown.pt" > "$tmp/fresh" 2>&1
rc=$?
check "grow: the fresh job of 4 ranks exits 0 ($rc)" "[ $rc -eq 0 ]"
grep '^step' "$tmp/grown" | awk '$2 >= 18' > "$tmp/a"
grep '^step' "$tmp/fresh" > "$tmp/b"
check "grow: the grown job's losses from step 18 equal the fresh job's, bit for bit" \
  "[ \$(wc -l < '$tmp/a') -eq 12 ] && diff '$tmp/a' '$tmp/b'"
check "grow: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
