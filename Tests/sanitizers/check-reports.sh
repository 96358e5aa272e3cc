#!/usr/bin/env bash
# Fails when a sanitizer wrote any report under DIR (log_path=DIR/tsan or DIR/asan), printing them.
set -euo pipefail
dir=${1:?usage: check-reports.sh DIR}
shopt -s nullglob
reports=("$dir"/*)
if ((${#reports[@]})); then
  for r in "${reports[@]}"; do echo "== $r"; head -60 "$r"; done
  echo "sanitizers: ${#reports[@]} report file(s) in $dir" >&2
  exit 1
fi
echo "sanitizers: no reports in $dir"
