#!/usr/bin/env bash
# The reference results that `make compare` sets new hardware against (results/reference/):
# the default experiment (experiments/quick.toml), tuned as it asks and again untuned, and the
# full one (all-strategies.toml), each run from a clean tree, thinned (analysis.trim),
# reported, the two states of the machine side by side (machines/, `make machines`), and
# described in a README.md that says how they were made (command, commit, machine, date:
# scripts/reference_readme.py).
#   scripts/reference.sh [DATA]
# The runs go to results/reference-new/ first: an interrupted reference resumes there when run
# again, and results/reference/ is replaced only once every experiment is complete. Before
# each experiment it waits for the machine to settle (at most LOADBENCH_SETTLE_WAIT seconds,
# default 60).
set -euo pipefail
data=${1:-data}
bin=${LOADBENCH:-build/loadbench}
if [[ -n $(git status --porcelain 2>/dev/null) ]]; then
  echo "reference.sh: the tree has uncommitted changes; the reference is made from a clean tree" \
    "(commit or stash them)" >&2
  exit 2
fi
# The experiments are one measurement: nothing else runs between them.
[[ -n ${LOADBENCH_LOCK_FD:-} ]] || exec "$bin" lock -- bash "${BASH_SOURCE[0]}" "$@"
new=results/reference-new
# name, experiment file, its options: quick-untuned is the same experiment on the same machine
# untuned, a second state of it for the machines report (make machines).
runs=("quick experiments/quick.toml" "quick-untuned experiments/quick.toml --tune off"
      "all-strategies experiments/all-strategies.toml")
names=()
for run in "${runs[@]}"; do
  read -r name file options <<<"$run"
  names+=("$name")
  # What ran before (the other experiment, its report) settles first; the line says how long.
  echo "reference: $("$bin" system settle || true)" >&2
  # shellcheck disable=SC2086  # the options are words
  resume=()  # an interrupted reference goes on where it stopped
  [[ -s $new/runs-$name/runs.jsonl ]] && resume=(--resume)
  "$bin" experiment "$file" --data "$data" --out "$new/runs-$name" --no-report "${resume[@]}" \
    $options
  rm -rf "$new/$name"
  /usr/bin/python3 -m analysis.trim "$new/runs-$name" "$new/$name"
done
for name in "${names[@]}"; do rm -rf "$new/runs-$name"; done
rm -rf results/reference
mv "$new" results/reference
# Reported where they stay, so that each report names its own folder.
for name in "${names[@]}"; do
  /usr/bin/python3 -m analysis.report "results/reference/$name" --brief
done
/usr/bin/python3 -m analysis.machines results/reference/quick results/reference/quick-untuned \
  --out results/reference/machines
/usr/bin/python3 scripts/reference_readme.py results/reference "${names[@]}" \
  >results/reference/README.md
echo "reference: results/reference/README.md"
