#!/usr/bin/env bash
# Does DDP training still converge with compressed gradients? examples/torch/ddp_train.py across two
# namespace hosts (tests/hosts/netns.sh) with PPN ranks on each, the same seeds and steps in every run: the
# gradients averaged exactly (tessera_torch's default), and with compressed_allreduce_hook in bf16, fp8 and
# int8, each with and without error feedback, once per seed (SEEDS: the model's, the data's and the
# evaluation set's). Prints each run's loss on the evaluation set, its difference from the exact run of the
# same seed, the mean over seeds, and the median step time; with RATE (tc tbf, e.g. 1gbit) on the link. One
# torch thread per rank (OMP_NUM_THREADS=1): the namespace hosts share this machine's CPUs.
# TRAIN_ARGS go to every run (e.g. "--label-noise 0.5 --cosine": a loss floor, and runs that end settled).
#   [STEPS=300] [PPN=2] [LR=0.01] [SEEDS="0 1 2"] [RATE=off] [MODES="int8 fp8 bf16"] [TRAIN_ARGS=]
#   bash bench/compress_ddp.sh [build-dir]
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
SEEDS=${SEEDS:-"0 1 2"}
TRAIN_ARGS=${TRAIN_ARGS:-}
hosts_up 2
[ "$RATE" = off ] || hosts_link rate="$RATE"
export TESSERA_RSH=$root/tests/hosts/rsh
train() {  # a name, a seed, then ddp_train.py's options
  local name=$1 seed=$2; shift 2
  env -u PYTHONPATH -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT timeout 1800 \
    "$build/bin/tessera-run" --hosts "h1:$PPN,h2:$PPN" --timeout 1700 --env OMP_NUM_THREADS=1 "$torch_py" \
    "$root/examples/torch/ddp_train.py" "$STEPS" --lr "$LR" --seed "$seed" $TRAIN_ARGS "$@" > "$out/$name.$seed.log" 2>&1 ||
    { tail -20 "$out/$name.$seed.log"; echo "compress_ddp: the run '$name' (seed $seed) failed" >&2; exit 1; }
  local loss ms
  loss=$(sed -n 's/^eval loss //p' "$out/$name.$seed.log")
  ms=$(sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' "$out/$name.$seed.log")
  echo "$name $seed $loss $ms" >> "$out/results"
  echo "compress_ddp: $name, seed $seed: eval loss $loss, median step $ms ms"
}
echo "compress_ddp: 2 hosts x $PPN ranks, $STEPS steps, lr $LR, seeds $SEEDS, link rate $RATE, options: ${TRAIN_ARGS:-none}"
for seed in $SEEDS; do
  train exact "$seed"
  for mode in $MODES; do
    train "$mode+feedback" "$seed" --compress "$mode"
    train "$mode-nofeedback" "$seed" --compress "$mode" --no-feedback
  done
done
python3 - "$out/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
exact = {seed: float(loss) for name, seed, loss, _ in rows if name == "exact"}
names = list(dict.fromkeys(r[0] for r in rows))
seeds = list(exact)
print(f"{'run':20s} " + " ".join(f"{'seed ' + s:>18s}" for s in seeds) + f" {'mean vs exact':>14s} {'mean |diff|':>12s} {'step ms':>8s}")
for name in names:
    mine = {seed: (float(loss), float(ms)) for n, seed, loss, ms in rows if n == name}
    rel = [100 * (mine[s][0] / exact[s] - 1) for s in seeds]
    cells = " ".join(f"{mine[s][0]:9.6f} ({r:+6.2f}%)" for s, r in zip(seeds, rel))
    print(f"{name:20s} {cells} {statistics.mean(rel):+13.2f}% {statistics.mean(abs(r) for r in rel):11.2f}%"
          f" {statistics.median(m[1] for m in mine.values()):8.2f}")
PY
