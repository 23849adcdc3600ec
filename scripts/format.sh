#!/usr/bin/env bash
# The C++ of loaders/, harness/ and tests/ against .clang-format (clang-format 14, Debian's):
# `check` (what `make test` runs first) lists the files that are not formatted and fails;
# `apply` formats them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
mapfile -t files < <(find loaders harness tests -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' \) | sort)
case $mode in
  apply) clang-format -i "${files[@]}" ;;
  check)
    bad=()
    for f in "${files[@]}"; do
      if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
    done
    if ((${#bad[@]} > 0)); then
      echo "format: ${#bad[@]} of ${#files[@]} files are not formatted (.clang-format); \`make format\` formats them:" >&2
      printf '  %s\n' "${bad[@]}" >&2
      exit 1
    fi
    echo "format: all ${#files[@]} C++ files formatted"
    ;;
  *) echo "format: unknown mode '$mode' (check, apply)" >&2; exit 2 ;;
esac
