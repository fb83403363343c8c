#!/usr/bin/env bash
# Tessera's torch.distributed backend ("tessera", import tessera_torch) side by side with PyTorch 2's gloo,
# at 2 and 4 ranks on this host, in one run: every collective at 8 B, 1 MiB, 16 MiB and 64 MiB (and barrier),
# DistributedDataParallel and FSDP2 training steps of a 25 M-parameter MLP with their parts measured alone,
# and the DDP step with tessera_torch's symmetric_allreduce_hook (tessera only). bench/torch_backend.py says what each row measures and how.
#   [QUICK=1] bash bench/torch_backend.sh [build-dir] [out-dir]
# Peers: both backends run the same script under tessera-run (one process per rank; it exports RANK,
# WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT and PYTHONPATH=<build>/python; gloo ignores Tessera and
# rendezvous through env:// like any torch job), so launch, CPU binding and thread settings are the same for
# both: GLOO_SOCKET_IFNAME=lo, OMP_NUM_THREADS=1 and torch.set_num_threads(1) in every rank (2 ranks on a
# 2-CPU machine get a CPU each, 4 ranks two per CPU: more intra-op threads would oversubscribe the CPUs
# under both backends' communication threads). gloo runs twice, with tessera-run's default binding and with
# --bind-to none, and the report takes its better figure per row (marked b or u). The backends alternate per
# rank count (tessera, then gloo twice),
# so drift of the shared machine hits both alike; compare ratios, not absolute numbers from different runs.
# Writes <out-dir>/results.jsonl and prints the ratio table with the project's targets next to the ratios.
# Needs a build with tessera_torch; runs the interpreter it was built for (make's build/venv, PyTorch 2.13.0).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
out="${2:-$build/bench-torch}"
mkdir -p "$out"
res="$out/results.jsonl"
: > "$res"
[ -f "$build/python/tessera_torch/__init__.py" ] || { echo "no tessera_torch in $build/python (not built?)" >&2; exit 1; }
py=$(sed -n 's/^TESSERA_TORCH_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
# The extension this run measures (the build may be rebuilt by someone else meanwhile: said at the end).
so_id() { stat -c '%y' "$build"/python/tessera_torch/_C*.so | cut -c1-19; }
so_before=$(so_id)
src=$(git -C "$build/.." log -1 --format='%h %s' 2>/dev/null | cut -c1-100 || echo '?')
export OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo PYTHONUNBUFFERED=1
quick=()
[ "${QUICK:-0}" = 1 ] && quick=(--quick)
status=0
for np in 2 4; do
  # gloo twice: with tessera-run's default binding and unbound; the report takes the better per row.
  for run in tessera:default gloo:default gloo:unbound; do
    backend=${run%%:*} binding=${run#*:}
    bind=()
    [ "$binding" = unbound ] && bind=(--bind-to none)
    echo "== $backend ($binding binding), $np ranks" >&2
    # A hang ends the job (and is reported as a failed run) instead of the whole bench.
    # --report-bindings: tessera-run notes on stderr when it widens the PEs to both CPUs because processes
    # outside the job use them (and binds them again); the summary under the table counts those changes.
    if ! TORCH_BENCH_BINDING=$binding "$build/bin/tessera-run" -n "$np" --timeout 900 --report-bindings "${bind[@]}" \
         $py "$here/torch_backend.py" --backend "$backend" --out "$res" "${quick[@]}" 2> "$out/$backend-$binding-$np.err" >&2; then
      echo "!! $backend ($binding) at $np ranks failed; the last lines of $out/$backend-$binding-$np.err:" >&2
      tail -5 "$out/$backend-$binding-$np.err" >&2
      status=1
    fi
  done
done
echo
$py "$here/torch_backend.py" --report "$res"
echo
echo "build: $build, tessera_torch/_C built $so_before; source tree at $src (plus any uncommitted edits)"
[ "$(so_id)" = "$so_before" ] || { echo "!! the extension was rebuilt during this run (now $(so_id)): the runs may mix builds"; status=1; }
echo
echo "tessera-run placement changes (PEs widened to all CPUs while outside processes used them / bound again):"
for np in 2 4; do
  for run in tessera-default gloo-default gloo-unbound; do
    f="$out/$run-$np.err"
    [ -f "$f" ] || continue
    echo "  $run, $np ranks: $(grep -c 'placement:.*now run on all' "$f" || true) widened, $(grep -c 'placement:.*bound to their CPU again' "$f" || true) rebound"
  done
done
exit $status
