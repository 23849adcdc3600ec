#!/usr/bin/env bash
# Packs the release binaries and the shared libraries they need beyond the C library into DIR,
# so that scripts/gpu-check.sh can run on a GPU machine that has a CUDA driver but none of the
# build's dependencies (CLI11, fmt, liburing, ...): carry DIR there and run
#   LOADBENCH_BUNDLE=DIR scripts/gpu-check.sh OUT
# The CUDA runtime is linked in statically; the driver (libcuda) and cuFile are the machine's.
#   scripts/gpu-bundle.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/gpu-bundle.sh DIR}
make build
cmake --build build -j "$(nproc)" --target loadbench_tests
./build/loadbench list | grep -qx cuda_bounce ||
  { echo "gpu-bundle.sh: build/ has no CUDA strategies (see \`build/loadbench list\`)" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/lib-cxx"
for b in loadbench loadbench_tests; do
  strip -o "$dir/bin/$b" "build/$b"
done
# Everything the binaries load but the C library and the dynamic loader, which the target has.
# The C++ runtime goes apart, in lib-cxx, used only where the target's own is too old: a newer
# one must stay in charge there, since the target's libcufile may need it.
ldd build/loadbench build/loadbench_tests | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' |
  while read -r lib; do
    case $(basename "$lib") in
      libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$dir/lib-cxx/" ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
du -sh "$dir" >&2
