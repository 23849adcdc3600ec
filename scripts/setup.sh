#!/usr/bin/env bash
# Installs every Debian package loadbench needs to build, test, run and analyse; with the
# argument `fuzz`, also clang and its libFuzzer runtime for `make fuzz`; with `peers`, also
# PyTorch for the PyTorch peers of loaders/peers/ (`make peers`; CI installs them too). Both are
# left out otherwise: `make run` and `make test` do not need them (the PyTorch peers are then
# `unsupported` and their tests skip), and PyTorch is large. Idempotent: packages already
# present are left alone, and apt is not touched at all when nothing is missing. Run as root
# (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libcli11-dev nlohmann-json3-dev libxxhash-dev libfmt-dev
  libgtest-dev libgmock-dev
  liburing-dev libboost-dev libpfm4-dev libbenchmark-dev libtomlplusplus-dev
  fio linux-perf openmpi-bin libopenmpi-dev clang-format
  python3 python3-pandas python3-matplotlib python3-pytest python3-numpy python3-scipy
  python3-xxhash
  chromium
  nginx-light libcurl4-openssl-dev s3fs rclone awscli python3-boto3 python3-botocore iperf3 fuse3
  iproute2
  xfsprogs btrfs-progs squashfs-tools erofs-utils
)
# s3rver is an npm package; npm comes from Debian only where there is none (a Node.js from
# elsewhere brings its own, and Debian's npm would conflict with it).
s3rver_version=3.7.1
if ! command -v s3rver >/dev/null && ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi
if [[ ${1:-} == fuzz ]]; then
  packages+=(clang libclang-rt-dev)
elif [[ ${1:-} == peers ]]; then
  packages+=(python3-torch)
elif [[ -n ${1:-} ]]; then
  echo "setup: unknown argument '$1' (the arguments are: fuzz, peers)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

need_s3rver=0
command -v s3rver >/dev/null || need_s3rver=1
if ((${#missing[@]} == 0 && need_s3rver == 0)); then
  echo "setup: all ${#packages[@]} packages present, and s3rver"
  exit 0
fi

# The package manager's output goes to a log; the screen gets a line per step.
log=${SETUP_LOG:-build/setup.log}
mkdir -p "$(dirname "$log")"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
if ((${#missing[@]} > 0)); then
  # nginx's package may start the system's nginx service on install (where there is a service
  # manager); loadbench never uses it: `serve` runs an nginx of its own on another port.
  echo "setup: ${#missing[@]} of ${#packages[@]} packages missing: ${missing[*]}"
  bash "$(dirname "$0")/step.sh" "$log" "setup: apt-get update" "${sudo[@]}" apt-get update -q
  bash "$(dirname "$0")/step.sh" "${log%.log}-install.log" "setup: apt-get install (${#missing[@]} packages)" \
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Not fatal: without s3rver only the S3 server is missing (its tests skip, saying so, and an
# experiment's [server] kind = "s3" is refused with the install command).
if ((need_s3rver)) && ! bash "$(dirname "$0")/step.sh" "${log%.log}-npm.log" \
    "setup: npm install -g s3rver@$s3rver_version" \
    "${sudo[@]}" npm install -g --no-audit --no-fund "s3rver@$s3rver_version"; then
  echo "setup: warning: s3rver could not be installed from npm (see ${log%.log}-npm.log); the" \
    "S3 server's tests will skip" >&2
fi
