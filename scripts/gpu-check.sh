#!/usr/bin/env bash
# The device check, for a machine with an NVIDIA GPU: the CUDA strategies' own tests on the
# device, the probe's ceilings (the host-to-GPU copy from pinned and pageable memory among
# them), then experiments/gpu.toml (every CUDA strategy, cold, 3 repetitions, a disk ceiling in
# every round, on a generated 4 GiB file), all into one results folder. Each step has a time
# limit so that the whole stays under 6 minutes; an interrupted experiment keeps its finished
# runs and resumes when run again with the same OUT.
#   scripts/gpu-check.sh [OUT] [DATA]
# With GPU_CHECK_ARCHIVE=FILE.tar.gz the results folder is also packed into that one file, for
# carrying back from a machine that returns only a few files.
# The binaries are build/ (made here with `make build`), or those of a bundle made by
# scripts/gpu-bundle.sh on a machine that has the build's dependencies: LOADBENCH_BUNDLE=DIR.
set -uo pipefail
out=${1:-results/gpu-$(date -u +%Y%m%d-%H%M%S)}
data=${2:-data}
started=$SECONDS
say() { printf 'gpu-check [%3ds] %s\n' $((SECONDS - started)) "$*" >&2; }

# cuFile where it comes as the nvidia-cufile Python package rather than in the library path
# (asked before the bundle's libraries are on the path).
if py_cufile=$(python3 -c 'import nvidia.cufile as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null) &&
  [[ -d $py_cufile ]]; then
  export LD_LIBRARY_PATH=$py_cufile${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [[ -n ${LOADBENCH_BUNDLE:-} ]]; then
  bin=$LOADBENCH_BUNDLE/bin/loadbench
  tests=$LOADBENCH_BUNDLE/bin/loadbench_tests
  export LD_LIBRARY_PATH=$LOADBENCH_BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ! "$bin" --version >/dev/null 2>&1; then
    say "the machine's C++ runtime is too old for the bundle: using the bundle's own"
    export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$LOADBENCH_BUNDLE/lib-cxx
  fi
else
  make build || { say "make build failed"; exit 1; }
  cmake --build build -j "$(nproc)" --target loadbench_tests || { say "the tests did not build"; exit 1; }
  bin=build/loadbench
  tests=build/loadbench_tests
fi
[[ -x $bin ]] || { say "$bin: no loadbench binary"; exit 2; }
mkdir -p "$out" "$data" || exit 2
[[ -e $out/env.json ]] && say "$out holds a run: resuming it"

say "the machine"
{ nvidia-smi || echo "nvidia-smi: not available"; } >"$out/nvidia-smi.txt" 2>&1
"$bin" list >"$out/list.txt" 2>&1
grep -A2 '^cuda_' "$out/list.txt" | grep -E '^cuda_|supported here' >&2

say "the CUDA tests on the device (90 s at most)"
if [[ -x $tests ]]; then
  timeout 90 "$tests" --gtest_brief=1 --gtest_filter='Cuda*:*CudaLoad*:Xxh3Parts*' \
    >"$out/device-tests.log" 2>&1
  say "device tests: exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/device-tests.log" | tr '\n' ' '))"
else
  say "no test binary at $tests: skipped"
fi

say "the probe: disk, memory and host-to-GPU ceilings (90 s at most)"
rm -rf "$out/probe"
timeout 90 "$bin" probe --dir "$data" --size 1GiB --out "$out/probe" >"$out/probe.txt" 2>"$out/probe.log"
say "probe: exit $?"
grep -E 'cold read|host to GPU' "$out/probe.txt" >&2

left=$((345 - (SECONDS - started)))
say "experiments/gpu.toml into $out ($left s at most)"
resume=()  # an interrupted check goes on where it stopped
[[ -s $out/runs.jsonl ]] && resume=(--resume)
timeout --signal=INT --kill-after=15 "$left" "$bin" experiment experiments/gpu.toml \
  --data "$data" --out "$out" "${resume[@]}" 2>&1 | tee "$out/experiment.log" | grep -vE '^\s*$' | tail -40
status=${PIPESTATUS[0]}
say "experiment: exit $status; results in $out"
if [[ -n ${GPU_CHECK_ARCHIVE:-} ]]; then
  tar -czf "$GPU_CHECK_ARCHIVE" -C "$(dirname "$out")" "$(basename "$out")" &&
    say "packed into $GPU_CHECK_ARCHIVE"
fi
exit "$status"
