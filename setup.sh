#!/usr/bin/env bash
# Installs every Debian package podsim needs (idempotent; as root or through sudo), then
# configures and builds into build/ (or $PODSIM_BUILD_DIR). Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")"

packages=(
  g++ cmake ninja-build ccache
  libboost-graph-dev libboost-program-options-dev
  libeigen3-dev nlohmann-json3-dev libbenchmark-dev doctest-dev
  protobuf-compiler libprotobuf-dev
  libopenmpi-dev openmpi-bin
  gnuplot-nox python3
  python3-dev pybind11-dev pybind11-json-dev python3-numpy python3-pytest python3-jsonschema
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir=${PODSIM_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja "$@" > /dev/null
cmake --build "$build_dir" -j "$(nproc)"
