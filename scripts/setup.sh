#!/usr/bin/env bash
# Installs the Debian packages loadbench needs, by what they are needed for:
#   scripts/setup.sh [GROUP...]
# Without a group, the base: what `make`, `make run` and the analysis (`make report`, `make
# compare`, `make machines`) need: the compiler, cmake, the libraries the binary links, and
# Python 3 with pandas, numpy, scipy, matplotlib and xxhash. Every group installs the base too,
# and then:
#   test     everything `make test` needs: GoogleTest and GoogleMock, Google Benchmark, pytest,
#            python3-jsonschema, and what the tests check and run (the groups format, remote,
#            cluster, storage, profile, fio and browser)
#   format   clang-format, for `make format` and the check `make test` starts with
#   remote   models over the network and shaped links (docs/remote.md): nginx-light, s3rver
#            (npm), s3fs, rclone, the AWS CLI, boto3, iperf3, iproute2, FUSE 3
#   cluster  experiments across MPI ranks and a fleet (docs/fleet.md): OpenMPI (the next build
#            links it)
#   storage  the storages an experiment makes (docs/storage.md): e2fsprogs, xfsprogs,
#            btrfs-progs, squashfs-tools, erofs-utils, and for a FUSE storage rclone, FUSE 3
#            and nginx-light
#   profile  `--profile` and `profile = true` (docs/profile.md): linux-perf
#   fio      fio, for experiments/fio-compare.toml and scripts/fio-compare.sh
#   bench    Google Benchmark, for `make bench` (the next build makes loadbench_bench)
#   browser  chromium, for the test that renders a report at a laptop's width
#   peers    PyTorch, for the PyTorch peers of loaders/peers/ (`make peers`; large)
#   fuzz     clang and its libFuzzer runtime, for `make fuzz`
# The make targets ask for the groups they need (Makefile), each once: a stamp file per group in
# the build folder keeps make from asking dpkg again. Without a group's packages, what needs them
# is `unsupported` with a reason, or its tests skip, saying which package is missing.
# Idempotent: packages already present are left alone, and apt is not touched at all when
# nothing is missing. Run as root (or with sudo available).
set -euo pipefail

declare -A group=(
  [base]="build-essential cmake pkg-config git
    libcli11-dev nlohmann-json3-dev libxxhash-dev libfmt-dev liburing-dev libboost-dev
    libpfm4-dev libtomlplusplus-dev libcurl4-openssl-dev
    python3 python3-pandas python3-matplotlib python3-numpy python3-scipy python3-xxhash"
  [test]="libgtest-dev libgmock-dev libbenchmark-dev python3-pytest python3-jsonschema"
  [format]="clang-format"
  [remote]="nginx-light s3fs rclone awscli python3-boto3 python3-botocore iperf3 iproute2 fuse3"
  [cluster]="openmpi-bin libopenmpi-dev"
  [storage]="e2fsprogs xfsprogs btrfs-progs squashfs-tools erofs-utils rclone fuse3 nginx-light"
  [profile]="linux-perf"
  [fio]="fio"
  [bench]="libbenchmark-dev"
  [browser]="chromium"
  [peers]="python3-torch"
  [fuzz]="clang libclang-rt-dev"
)
# The groups a group takes in whole.
declare -A includes=([test]="format remote cluster storage profile fio browser")
# Groups that need s3rver (npm) besides packages.
declare -A wants_s3rver=([remote]=1)
names="base test format remote cluster storage profile fio bench browser peers fuzz"

asked=("$@")
for g in "${asked[@]}"; do
  if [[ $g == base ]]; then continue; fi
  if [[ -z ${group[$g]+set} ]]; then
    echo "setup: unknown group '$g' (the groups are: ${names// /, })" >&2
    exit 2
  fi
done
label=${*:-base}
label=${label// /+}

# The groups asked for, with base and what each takes in.
todo=(base)
for g in "${asked[@]}"; do
  todo+=("$g")
  for i in ${includes[$g]:-}; do todo+=("$i"); done
done
packages=()
s3rver_asked=0
declare -A seen=()
for g in "${todo[@]}"; do
  for p in ${group[$g]}; do
    [[ -n ${seen[$p]:-} ]] && continue
    seen[$p]=1
    packages+=("$p")
  done
  if [[ -n ${wants_s3rver[$g]:-} ]]; then s3rver_asked=1; fi
done
# s3rver is an npm package; npm comes from Debian only where there is none (a Node.js from
# elsewhere brings its own, and Debian's npm would conflict with it).
s3rver_version=3.7.1
need_s3rver=0
if ((s3rver_asked)) && ! command -v s3rver >/dev/null; then
  need_s3rver=1
fi
if ((need_s3rver)) && ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0 && need_s3rver == 0)); then
  echo "setup ($label): all ${#packages[@]} packages present$( ((s3rver_asked)) && echo ", and s3rver")"
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
  echo "setup ($label): ${#missing[@]} of ${#packages[@]} packages missing: ${missing[*]}"
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
