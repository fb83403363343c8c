#!/usr/bin/env bash
# A torch program under Open MPI's mpirun on this host, as the docs tell a user to start it: MASTER_ADDR and
# MASTER_PORT given with -x, RANK and WORLD_SIZE taken by tessera_torch from mpirun's own variables, Tessera
# itself wired through PMIx. Skips (77) without mpirun.
#   mpirun_torch.sh BUILD_DIR PYTHON SCRIPT [ARGS...]
set -euo pipefail
build=$1 py=$2
shift 2
command -v mpirun >/dev/null || { echo "skipped: mpirun is not installed (openmpi-bin)"; exit 77; }
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec timeout 280 mpirun --oversubscribe --bind-to none -np 2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" \
  -x PYTHONPATH="$build/python" -x TESSERA_TIMEOUT=120 "$py" "$@"
