#!/usr/bin/env bash
# Runs scripts/sampling_overhead.py (see its --help) with Debian's python3.
py=/usr/bin/python3
[[ -x $py ]] || { echo "sampling-overhead: $py not found (scripts/setup.sh installs it)" >&2; exit 2; }
exec "$py" "${BASH_SOURCE[0]%/*}/sampling_overhead.py" "$@"
