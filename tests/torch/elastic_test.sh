#!/usr/bin/env bash
# The torch example keeps training after a rank dies (resilient mode, docs/resilience.md): 4 ranks under
# tessera-run --on-failure continue, rank 2 killed at step 12; the 3 survivors shrink the default group and
# go on. A fresh job of 3 ranks resumed from the state the survivors recovered with must then print the same
# losses, bit for bit (TESSERA_DETERMINISTIC=1 in both).
set -u
build=${1:?build dir}
py=${2:?python}
example="$(dirname "$0")/../../examples/torch/elastic_train.py"
run="$build/bin/tessera-run"
. "$(dirname "$0")/../scripts/lib.sh"

"$run" -n 4 --on-failure continue --timeout 240 --env TESSERA_DETERMINISTIC=1 \
  "$py" "$example" 24 --kill-rank 2 --kill-step 12 --save-at-recovery "$tmp/state.pt" > "$tmp/survivors" 2>&1
rc=$?
cat "$tmp/survivors"
check "the survivors' job exits 0 ($rc)" "[ $rc -eq 0 ]"
check "the launcher went on without PE 2" "grep -q 'the job went on without PE 2,' '$tmp/survivors'"
check "3 ranks recovered at step 12" "grep -q '^recovered: 3 ranks go on from step 12$' '$tmp/survivors'"
check "the survivors trained to the last step" "grep -q '^step 23 loss .* ranks 3$' '$tmp/survivors'"
check "4 ranks before the failure" "grep -q '^step 11 loss .* ranks 4$' '$tmp/survivors'"

"$run" -n 3 --timeout 240 --env TESSERA_DETERMINISTIC=1 "$py" "$example" 24 --resume "$tmp/state.pt" > "$tmp/fresh" 2>&1
rc=$?
cat "$tmp/fresh"
check "the fresh job of 3 ranks exits 0 ($rc)" "[ $rc -eq 0 ]"
grep '^step' "$tmp/survivors" | awk '$2 >= 12' > "$tmp/a"
grep '^step' "$tmp/fresh" > "$tmp/b"
check "the survivors' losses from step 12 equal the fresh job's, bit for bit" \
  "[ -s '$tmp/a' ] && [ \$(wc -l < '$tmp/a') -eq 12 ] && diff '$tmp/a' '$tmp/b'"
check "nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
