#!/usr/bin/env bash
# Runs scripts/fio_compare.py (see its --help) with Debian's python3, the one that sees
# python3-numpy and python3-pandas; the python3 first on PATH may be another build.
py=/usr/bin/python3
[[ -x $py ]] || { echo "fio-compare: $py not found (scripts/setup.sh installs it)" >&2; exit 2; }
exec "$py" "${BASH_SOURCE[0]%/*}/fio_compare.py" "$@"
