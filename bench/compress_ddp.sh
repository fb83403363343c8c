#!/usr/bin/env bash
# Does DDP training still converge with compressed gradients? examples/torch/ddp_train.py across two
# namespace hosts (tests/hosts/netns.sh) with PPN ranks on each, the same seeds and steps in every run: the
# gradients averaged exactly (tessera_torch's default), and with compressed_allreduce_hook in bf16, fp8 and
# int8, each with and without error feedback. Prints each run's loss on the fixed evaluation set, its
# difference from the exact run's, and the median step time; with RATE (tc tbf, e.g. 1gbit) on the link.
#   [STEPS=300] [PPN=2] [LR=0.01] [RATE=off] [MODES="int8 fp8 bf16"] bash bench/compress_ddp.sh [build-dir]
# Needs root and the torch backend (make test builds it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
torch_py=$(bash "$root/scripts/torch-env.sh" "$build")
# shellcheck source=../tests/hosts/netns.sh disable=SC1091
. "$root/tests/hosts/netns.sh"
hosts_require_root
out=$(mktemp -d)
trap 'hosts_down; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
STEPS=${STEPS:-300}
PPN=${PPN:-2}
LR=${LR:-0.01}
RATE=${RATE:-off}
MODES=${MODES:-"int8 fp8 bf16"}
hosts_up 2
[ "$RATE" = off ] || hosts_link rate="$RATE"
export TESSERA_RSH=$root/tests/hosts/rsh
train() {  # a name, then ddp_train.py's options
  local name=$1; shift
  env -u PYTHONPATH -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT timeout 1800 \
    "$build/bin/tessera-run" --hosts "h1:$PPN,h2:$PPN" --timeout 1700 "$torch_py" \
    "$root/examples/torch/ddp_train.py" "$STEPS" --lr "$LR" "$@" > "$out/$name.log" 2>&1 ||
    { tail -20 "$out/$name.log"; echo "compress_ddp: the run '$name' failed" >&2; exit 1; }
  local loss ms
  loss=$(sed -n 's/^eval loss //p' "$out/$name.log")
  ms=$(sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' "$out/$name.log")
  echo "$name $loss $ms" >> "$out/results"
  echo "compress_ddp: $name: eval loss $loss, median step $ms ms"
}
echo "compress_ddp: 2 hosts x $PPN ranks, $STEPS steps, lr $LR, link rate $RATE"
train exact
for mode in $MODES; do
  train "$mode+feedback" --compress "$mode"
  train "$mode-nofeedback" --compress "$mode" --no-feedback
done
python3 - "$out/results" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
base = float(rows[0][1])
print(f"{'run':22s} {'eval loss':>12s} {'vs exact':>9s} {'step ms':>8s}")
for name, loss, ms in rows:
    print(f"{name:22s} {float(loss):12.6f} {100 * (float(loss) / base - 1):+8.2f}% {float(ms):8.2f}")
PY
