#!/usr/bin/env bash
# The regression gate measured (docs/rounds.md, "The gate's false alarms"): N repetitions, each
# two results folders run back to back on one file (aa.toml's: a llama WLF of GATE_SIZE, cold,
# GATE_REPS rounds with a ceiling read in each, the balanced order seeded by the repetition):
#   OUT/base/NN     mmap_seq:label=a and mmap_seq:label=b (aa.toml's A/A pair), owned:label=p
#   OUT/planted/NN  the same, but row p is GATE_PLANT, owned:handout=end by default: Load returns
#                   with every byte in place, so the checksum no longer overlaps the reads
#                   (1.16x (1.07-1.25) owned's time cold, 2 GiB, on the 2-core VM of
#                   docs/strategies.md's "How the defaults were found")
# then `python3 -m analysis.gate --aa OUT/base/* --planted OUT/planted/*` prints the share of
# comparisons between base folders (folders of the same code: every pair, three rows each) the
# gate flags at GATE_MAX, its false-alarm rate, and the share of planted rows it catches, each
# with its exact 95% interval; the same into OUT/gate-aa.json. An interrupted run resumes when
# run again with the same arguments: a folder's runs already made are kept. Before each folder
# the machine settles (`loadbench system settle`, at most LOADBENCH_SETTLE_WAIT s, default 60).
#   scripts/gate-aa.sh N OUT [DATA]
# GATE_SIZE (2GiB), GATE_REPS (12), GATE_CACHE (cold; warm for a quick check without root),
# GATE_MAX (5%), GATE_PLANT (owned:handout=end), LOADBENCH (build/loadbench).
set -euo pipefail
usage="usage: scripts/gate-aa.sh N OUT [DATA]"
n=${1:?$usage}
out=${2:?$usage}
data=${3:-data}
bin=${LOADBENCH:-build/loadbench}
size=${GATE_SIZE:-2GiB}
reps=${GATE_REPS:-12}
cache=${GATE_CACHE:-cold}
max=${GATE_MAX:-5%}
plant=${GATE_PLANT:-owned:handout=end}
[[ $n =~ ^[0-9]+$ && $n -ge 2 ]] || { echo "gate-aa.sh: N must be 2 or more, not '$n'" >&2; exit 2; }
[[ $cache == cold || $cache == warm ]] || { echo "gate-aa.sh: GATE_CACHE must be cold or warm, not '$cache'" >&2; exit 2; }
# The whole measurement is one: nothing else measures between its folders.
[[ -n ${LOADBENCH_LOCK_FD:-} ]] || exec "$bin" lock -- bash "${BASH_SOURCE[0]}" "$@"
file="$data/llama-$size-bf16-s0.wlf"  # aa.toml's file, named as an experiment names it
mkdir -p "$data" "$out/base" "$out/planted"
"$bin" gen --preset llama --size "$size" --format wlf --out "$file" --quiet
ceiling=()
[[ $cache == warm ]] || ceiling=(--ceiling)
one() {  # one() DIR SEED P_SPEC: a folder of the A/A pair and row p, resumed where it has runs
  local dir=$1 seed=$2 p=$3 resume=()
  [[ -s $dir/runs.jsonl ]] && resume=(--resume)
  echo "gate-aa.sh: $("$bin" system settle || true)" >&2
  # Exit 1: some run failed or was invalid, which the folder records and the gate leaves out.
  "$bin" run --file "$file" --strategies "mmap_seq:label=a,mmap_seq:label=b,$p:label=p" \
    --baseline "mmap_seq:label=a" --cache "$cache" --reps "$reps" "${ceiling[@]}" \
    --seed "$seed" --experiment gate-aa --out "$dir" --no-report "${resume[@]}" >/dev/null || (($? == 1))
}
for ((i = 1; i <= n; ++i)); do
  name=$(printf '%02d' "$i")
  echo "gate-aa.sh: repetition $i of $n -> $out/{base,planted}/$name" >&2
  one "$out/base/$name" "$i" owned
  one "$out/planted/$name" "$i" "$plant"
done
base=() planted=()
for ((i = 1; i <= n; ++i)); do
  base+=("$(printf '%s/base/%02d' "$out" "$i")")
  planted+=("$(printf '%s/planted/%02d' "$out" "$i")")
done
PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)${PYTHONPATH:+:$PYTHONPATH}" \
  /usr/bin/python3 -m analysis.gate --aa "${base[@]}" --planted "${planted[@]}" \
  --max-slowdown "$max" --json "$out/gate-aa.json"
