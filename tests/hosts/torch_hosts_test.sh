#!/usr/bin/env bash
# PyTorch across namespace hosts (netns.sh; tests/hosts/rsh as TESSERA_RSH): `tessera-run --hosts` starts a
# torch program as written, with no PYTHONPATH, RANK or MASTER_* from the user: every PE finds tessera_torch
# and gets torch's env:// variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR the first
# host, MASTER_PORT a port free there). Every operation of ops_test.py then passes with two PEs on each of two
# hosts, and a DDP run matches one process; ops_test.py passes again under torch's own launcher started on
# each host (--nnodes 2). compress_test.py codes DDP's gradients between the hosts. Under --on-failure
# continue, DDP goes on after a rank on the other host dies, exactly as a run resumed from its state would.
# Usage: torch_hosts_test.sh BUILD_DIR. Skips (77) unless run as root and the backend was built.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
py=$(sed -n 's/^TESSERA_TORCH_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
[ -d "$build/python/tessera_torch" ] && [ -n "$py" ] || { echo "skipped: the torch backend was not built"; exit 77; }
# shellcheck source=netns.sh disable=SC1091
. "$here/netns.sh"
hosts_require_root
trap hosts_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_up 2 || { echo "FAIL hosts_up 2"; exit 1; }
export TESSERA_RSH=$here/rsh
fails=0
run() { env -u PYTHONPATH -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT timeout 280 \
          "$build/bin/tessera-run" --hosts h1:2,h2:2 --timeout 270 --env TESSERA_TIMEOUT=60 "$@" 2>&1; }

out=$(run "$py" -c '
import os, torch.distributed as dist, tessera_torch
dist.init_process_group("tessera")
want = dict(RANK=dist.get_rank(), WORLD_SIZE=4, LOCAL_RANK=dist.get_rank() % 2, LOCAL_WORLD_SIZE=2, MASTER_ADDR="h1")
got = {k: (os.environ[k] if k == "MASTER_ADDR" else int(os.environ[k])) for k in want}
assert got == want, (got, want)
assert int(os.environ["MASTER_PORT"]) > 0
print("env ok on rank", dist.get_rank())
') || { echo "$out"; echo "FAIL the environment of torch programs across hosts"; fails=1; }
[ "$(echo "$out" | grep -c "env ok on rank")" = 4 ] || { echo "$out"; echo "FAIL not every rank saw its environment"; fails=1; }

out=$(run "$py" "$here/../torch/ops_test.py") || { echo "$out" | tail -20; echo "FAIL ops_test.py on 2 hosts x 2 PEs"; fails=1; }
echo "$out" | grep -q "ops_test: .* cases passed on 4 ranks" || { echo "FAIL ops_test.py did not report its cases"; fails=1; }
out=$(run "$py" "$here/../torch/ddp_test.py" 3) || { echo "$out" | tail -20; echo "FAIL ddp_test.py on 2 hosts x 2 PEs"; fails=1; }
out=$(run "$py" "$here/../torch/compress_test.py") || { echo "$out" | tail -20; echo "FAIL compress_test.py on 2 hosts x 2 PEs"; fails=1; }
echo "$out" | grep -q "compress_test: all checks passed at 4 ranks across hosts" || { echo "FAIL compress_test.py did not check across hosts"; fails=1; }

# Resilient mode (docs/resilience.md): DDP keeps training on 3 ranks after rank 2 (on h2) is killed at step
# 12; the model it recovers with equals, bit for bit, the one a run without the failure holds at step 12,
# and a fresh job of the same 3 ranks' layout (h1:2,h2:1) resumed from it prints the same losses
# (TESSERA_DETERMINISTIC=1 in all).
example="$here/../../examples/torch/elastic_train.py"
state=$NETNS_HOSTS_DIR/state.pt intact=$NETNS_HOSTS_DIR/intact.pt
out=$(run --on-failure continue --env TESSERA_DETERMINISTIC=1 "$py" "$example" 24 --kill-rank 2 --kill-step 12 \
        --save-at-recovery "$state")
survivors=$out
{ echo "$out" | grep -q "the job went on without PE 2," && echo "$out" | grep -q '^recovered: 3 ranks go on from step 12$' &&
  echo "$out" | grep -q '^step 23 loss .* ranks 3$'; } || { echo "$out" | tail -20; echo "FAIL elastic DDP across hosts: the survivors did not train on"; fails=1; }
out=$(run --env TESSERA_DETERMINISTIC=1 "$py" "$example" 13 --save-at 12 "$intact") ||
  { echo "$out" | tail -20; echo "FAIL elastic DDP across hosts: the run without a failure"; fails=1; }
out=$("$py" -c '
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a["step"] == b["step"] == 12 and list(a["model"]) == list(b["model"])
assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"]), "the models differ"
print("same model")' "$intact" "$state" 2>&1) || { echo "$out"; echo "FAIL elastic DDP across hosts: the recovered model differs"; fails=1; }
out=$(env -u PYTHONPATH timeout 280 "$build/bin/tessera-run" --hosts h1:2,h2:1 --timeout 270 --env TESSERA_TIMEOUT=60 \
        --env TESSERA_DETERMINISTIC=1 "$py" "$example" 24 --resume "$state" 2>&1)
[ -n "$(echo "$out" | grep '^step')" ] && [ "$(echo "$survivors" | grep '^step' | awk '$2 >= 12')" = "$(echo "$out" | grep '^step')" ] ||
  { echo "$out" | tail -20; echo "FAIL elastic DDP across hosts: the fresh 3-rank job's losses differ from the survivors'"; fails=1; }

# torch's own launcher on each host, as a user runs it across nodes: the rendezvous at h1, Tessera wired
# through the id rank 0 publishes in torch's store.
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for node in 0 1; do
  host_exec "h$((node + 1))" env PYTHONPATH="$build/python" TESSERA_TIMEOUT=60 timeout 280 "$py" -m torch.distributed.run \
    --nnodes 2 --node_rank $node --nproc_per_node 2 --master_addr h1 --master_port "$port" \
    "$here/../torch/ops_test.py" > "$NETNS_HOSTS_DIR/torchrun$node.out" 2>&1 &
  pids[node]=$!
done
for node in 0 1; do
  wait "${pids[node]}" || { tail -20 "$NETNS_HOSTS_DIR/torchrun$node.out"; echo "FAIL torchrun node $node of 2"; fails=1; }
done
grep -q "ops_test: .* cases passed on 4 ranks" "$NETNS_HOSTS_DIR/torchrun0.out" || { echo "FAIL ops_test.py under torchrun across hosts did not report its cases"; fails=1; }

[ $fails -eq 0 ] && echo "ok: torch programs across 2 namespace hosts under tessera-run --hosts (environment, every operation, DDP, compressed gradients, DDP surviving a rank's death) and torchrun"
exit $fails
