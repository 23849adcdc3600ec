#!/usr/bin/env bash
# The reference results that `make compare` sets new hardware against (results/reference/):
# the default experiment (experiments/quick.toml) and the full one (all-strategies.toml), each
# run from a clean tree, thinned (analysis.trim), reported, and described in a README.md that
# says how they were made (command, commit, machine, date: scripts/reference_readme.py).
#   scripts/reference.sh [DATA]
# The runs go to results/reference-new/ first: an interrupted reference resumes there when run
# again, and results/reference/ is replaced only once both experiments are complete. Before
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
# Both experiments are one measurement: nothing else runs between them.
[[ -n ${LOADBENCH_LOCK_FD:-} ]] || exec "$bin" lock -- bash "${BASH_SOURCE[0]}" "$@"
new=results/reference-new
for name in quick all-strategies; do
  # What ran before (the other experiment, its report) settles first; the line says how long.
  echo "reference: $("$bin" system settle || true)" >&2
  "$bin" experiment "experiments/$name.toml" --data "$data" --out "$new/runs-$name"
  rm -rf "$new/$name"
  /usr/bin/python3 -m analysis.trim "$new/runs-$name" "$new/$name"
done
rm -rf "$new/runs-quick" "$new/runs-all-strategies" results/reference
mv "$new" results/reference
# Reported where they stay, so that each report names its own folder.
for name in quick all-strategies; do
  /usr/bin/python3 -m analysis.report "results/reference/$name" --brief
done
/usr/bin/python3 scripts/reference_readme.py results/reference quick all-strategies \
  >results/reference/README.md
echo "reference: results/reference/README.md"
