#!/usr/bin/env bash
# One line on the screen for a step whose output goes to a log:
#   scripts/step.sh LOG "what it does" COMMAND [ARGS...]
# prints "what it does ... done in 42 s (log: LOG)", then any compiler warnings from the log (a
# build keeps them at zero); on failure, the log's last 40 lines and the command's exit code.
set -uo pipefail
log=$1 what=$2
shift 2
mkdir -p "$(dirname "$log")"
start=$SECONDS
printf '%s ... ' "$what"
"$@" >"$log" 2>&1
rc=$?
took=$((SECONDS - start))
if ((took >= 60)); then took="$((took / 60)) min $((took % 60)) s"; else took="$took s"; fi
if ((rc != 0)); then
  echo "failed after $took (exit $rc); the end of $log:"
  tail -n 40 "$log"
  exit "$rc"
fi
echo "done in $took (log: $log)"
grep -m 20 -E 'warning:' "$log" || true
