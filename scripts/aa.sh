#!/usr/bin/env bash
# The A/A calibration: runs experiments/aa.toml N times, each into its own folder under OUT
# with its own seed for the balanced order (so that no order effect repeats in every one; an
# interrupted folder resumes when run again with the same OUT), then prints the
# false-positive rate of the paired comparison over them (analysis/aa.py) and the regression
# gate's false-alarm rate over every pair of them (analysis/gate.py --aa). Before each, it
# waits for the machine to settle (`loadbench system settle`, at most LOADBENCH_SETTLE_WAIT
# seconds, default 60) and says how long it waited.
#   scripts/aa.sh N OUT [DATA]
set -euo pipefail
n=${1:?usage: scripts/aa.sh N OUT [DATA]}
out=${2:?usage: scripts/aa.sh N OUT [DATA]}
data=${3:-data}
bin=${LOADBENCH:-build/loadbench}
[[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || { echo "aa.sh: N must be a positive number, not '$n'" >&2; exit 2; }
# The whole calibration is one measurement: nothing else runs between its experiments.
[[ -n ${LOADBENCH_LOCK_FD:-} ]] || exec "$bin" lock -- bash "${BASH_SOURCE[0]}" "$@"
for ((i = 1; i <= n; ++i)); do
  dir=$(printf '%s/%02d' "$out" "$i")
  echo "aa.sh: repetition $i of $n -> $dir" >&2
  # The previous repetition's work (and whatever else) settles first; the line says how long
  # that took, and a machine still busy is said by the experiment's WARNING too.
  echo "aa.sh: $("$bin" system settle || true)" >&2
  "$bin" experiment experiments/aa.toml --out "$dir" --data "$data" --seed "$i" --quiet --no-report \
    >/dev/null
done
folders=()
for ((i = 1; i <= n; ++i)); do folders+=("$(printf '%s/%02d' "$out" "$i")"); done
# The paired comparison's false-positive rate, then the regression gate's false alarms over
# the same folders (every pair, unpaired: analysis/stats/gate.py; docs/rounds.md).
rc=0
/usr/bin/python3 -m analysis.aa "${folders[@]}" || rc=$?
if ((n >= 2)); then
  /usr/bin/python3 -m analysis.gate --aa "${folders[@]}" --json "$out/gate-aa.json"
fi
exit $rc
