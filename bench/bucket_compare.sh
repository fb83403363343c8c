#!/usr/bin/env bash
# One data-parallel step's gradient allreduce over ResNet-50's parameter shapes (161 tensors, 25.6 M floats):
# Tessera (tessera-perf bucket: per tensor, Bucketer over views of one flat buffer, Bucketer packing separate
# tensors) next to PyTorch gloo (per tensor, and DistributedDataParallel's bucketed sync), at 2 and 4
# ranks, back to back; prints the times and the ratios.
#   bash bench/bucket_compare.sh [build-dir] [steps]
# gloo runs on build/venv's PyTorch 2 (scripts/torch-env.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
torch_py=$(bash "$here/../scripts/torch-env.sh" "$build")  # the PyTorch 2 the backend is built with (build/venv)
steps=${2:-5}
bash "$here/../scripts/install-deps.sh" bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for np in 2 4; do
  "$build/bin/tessera-run" -n "$np" "$build/bin/tessera-perf" bucket -n "$steps" --json >> "$tmp/tessera.jsonl"
  "$torch_py" "$here/bucket_gloo.py" "$np" "$steps" >> "$tmp/gloo.jsonl"
done
/usr/bin/python3 - "$tmp/tessera.jsonl" "$tmp/gloo.jsonl" <<'PY'
import json, sys
t = {r["ranks"]: r for r in map(json.loads, open(sys.argv[1]))}
g = {r["ranks"]: r for r in map(json.loads, open(sys.argv[2]))}
print("gradient allreduce of one step (ms, slowest rank's mean); ratio = tessera / gloo (lower is better)")
print(f"{'ranks':>5} {'tessera/tensor':>15} {'tessera bucketed':>17} {'tessera packed':>15} {'gloo/tensor':>12} "
      f"{'gloo DDP':>9} {'per tensor':>11} {'bucketed vs DDP':>16}")
for n in sorted(t):
    a, b = t[n], g.get(n)
    if not b:
        continue
    print(f"{n:>5} {a['per_tensor_ms']:>15.2f} {a['bucketed_ms']:>17.2f} {a['packed_ms']:>15.2f} "
          f"{b['per_tensor_ms']:>12.2f} {b['ddp_ms']:>9.2f} {a['per_tensor_ms'] / b['per_tensor_ms']:>10.2f}x "
          f"{a['bucketed_ms'] / b['ddp_ms']:>15.2f}x")
PY
