#!/usr/bin/env bash
# Prints the Python interpreter the torch backend (python/) is built and tested with, preparing it if needed.
#   scripts/torch-env.sh BUILD_DIR
# - TORCH_PYTHON=/path/to/python: that interpreter, which must import torch 2.4 or newer (checked here).
# - Otherwise BUILD_DIR/venv, a virtual environment of `python3` (PATH) with PyTorch $TORCH_VERSION (CPU
#   build) and NumPy, made on first use; pip is pinned to that version, because an unpinned torch is a
#   several-GB CUDA download. Debian's python3-venv is installed when python3 lacks the venv module.
# Messages go to stderr; stdout is the interpreter's path alone. Idempotent; safe without a terminal.
set -euo pipefail
build=${1:?usage: torch-env.sh BUILD_DIR}
version=${TORCH_VERSION:-2.13.0}

torch_of() {  # the torch version an interpreter imports, or nothing
  "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null </dev/null || true
}

if [ -n "${TORCH_PYTHON:-}" ]; then
  py=$(command -v "$TORCH_PYTHON" || true)
  [ -n "$py" ] || { echo "torch-env: TORCH_PYTHON=$TORCH_PYTHON is not an interpreter" >&2; exit 2; }
  have=$(torch_of "$py")
  case "$have" in
    2.[4-9]*|2.[1-9][0-9]*|[3-9].*) ;;
    "") echo "torch-env: TORCH_PYTHON=$py cannot import torch" >&2; exit 2 ;;
    *) echo "torch-env: TORCH_PYTHON=$py has torch $have; the backend needs torch 2.4 or newer" >&2; exit 2 ;;
  esac
  echo "$py"
  exit 0
fi

venv="$(cd "$build" 2>/dev/null && pwd || { mkdir -p "$build" && cd "$build" && pwd; })/venv"
if [ "$(torch_of "$venv/bin/python")" != "${version}+cpu" ] && [ "$(torch_of "$venv/bin/python")" != "$version" ]; then
  base=$(command -v python3 || true)
  [ -n "$base" ] || { echo "torch-env: no python3 on PATH" >&2; exit 2; }
  if ! "$base" -c 'import venv, ensurepip' 2>/dev/null; then
    minor=$("$base" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "torch-env: installing python${minor}-venv" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq </dev/null >&2
    $sudo apt-get install -y -qq --no-install-recommends "python${minor}-venv" </dev/null >&2
  fi
  echo "torch-env: making $venv with torch==$version (CPU) for $("$base" --version 2>&1)" >&2
  rm -rf "$venv"
  "$base" -m venv "$venv" >&2
  # This project's machines keep the CPU build's wheel where pip finds it; elsewhere pip takes PyPI's build.
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$version" numpy </dev/null >&2
fi
echo "$venv/bin/python"
