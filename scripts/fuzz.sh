#!/usr/bin/env bash
# Builds the libFuzzer targets of the weight-file readers (loaders/format/fuzz/) with clang under
# AddressSanitizer and UndefinedBehaviorSanitizer, runs them all at once for SECONDS each, and
# prints each target's executions. A crash, an input slower than 10 s, or one malloc over
# 256 MiB stops its target and leaves the input in OUT/crashes/; copy it into
# loaders/format/fuzz/regressions/ so that the test suite replays it from then on.
#
#   scripts/fuzz.sh [SECONDS] [OUT]      (defaults: 600, build-fuzz; `make fuzz` runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
out=${2:-build-fuzz}
targets=(safetensors gguf)
srcs=(loaders/format/*.cc loaders/base/file_io.cc loaders/base/status.cc)  # the readers and what they use
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found; run: bash scripts/setup.sh fuzz" >&2; exit 2; }

mkdir -p "$out/crashes"
for t in "${targets[@]}"; do
  echo "fuzz: building $out/${t}_fuzz"
  clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Wall -Wextra -Werror -I. "loaders/format/fuzz/${t}_fuzz.cc" "${srcs[@]}" -lfmt -lxxhash \
    -o "$out/${t}_fuzz"
done

pids=()
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  echo "fuzz: running $t for $seconds s (log: $out/$t.log)"
  "$out/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -malloc_limit_mb=256 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/crashes/$t-" \
    "$out/corpus/$t" "loaders/format/fuzz/seeds/$t" >"$out/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then result=ok; else result="FAILED (see $out/$t.log and $out/crashes/)"; status=1; fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$' || echo '?')
  secs=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' "$out/$t.log" | tail -1 || true)
  echo "fuzz: $t: $result, $execs executions ($secs/s), $cov, corpus $(ls "$out/corpus/$t" | wc -l) inputs"
done
exit $status
