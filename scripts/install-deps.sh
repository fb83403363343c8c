#!/usr/bin/env bash
# Installs the Debian packages Tessera needs, only those missing. Idempotent; safe without a terminal.
#   scripts/install-deps.sh build   compilers, CMake and the libraries Tessera links (make, make test)
#   scripts/install-deps.sh bench   also the peers measured side by side (Open MPI, PyTorch's gloo)
set -euo pipefail
profile=${1:-build}

build_pkgs=(g++ cmake make pkg-config libhwloc-dev libucx-dev libpmix-dev libssl-dev libhwy-dev libopenblas-dev
            libcli11-dev libfmt-dev procps nlohmann-json3-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
            openmpi-bin doxygen python3 iproute2 python3-dev clang libclang-rt-dev)
# libssl-dev: the TCP bootstrap's handshake (HMAC-SHA256); mpirun: the PMIx start-up tests; doxygen: the C++ API
# reference; python3: the TCP bootstrap test's outside client (tests/scripts/tcp_handshake.py); iproute2: the
# namespace hosts of tests/hosts; python3-dev: headers for the torch.distributed backend (python/), whose PyTorch 2
# comes from pip into build/venv (scripts/torch-env.sh), not from Debian (1.13 on Debian 12, 2.6 on 13); clang,
# libclang-rt-dev: the parsers' libFuzzer harnesses (tests/fuzz, make fuzz, part of make test), which need clang's
# -fsanitize=fuzzer and its runtime. The names are those of Debian 12 and 13 alike (libclang-rt-dev follows the
# release's clang: 14 on 12, 19 on 13).
bench_pkgs=(libopenmpi-dev ucx-utils python3-matplotlib iperf3 valgrind)

want=("${build_pkgs[@]}")
[ "$profile" = bench ] && want+=("${bench_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq </dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
