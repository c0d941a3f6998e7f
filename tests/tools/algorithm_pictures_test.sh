#!/usr/bin/env bash
# Regenerates the algorithm pictures into a temporary directory and compares them, byte for byte,
# with the checked-in ones. Usage: algorithm_pictures_test.sh <rl-algorithm-pictures> <docs dir>
set -uo pipefail
tool=$1
checked_in=$2
out=$(mktemp -d /tmp/rl-pictures-XXXXXX)
trap 'rm -rf "$out"' EXIT
"$tool" "$out" || { echo "FAIL: $tool exited $?"; exit 1; }
rc=0
for f in "$out"/*.svg; do
  name=$(basename "$f")
  if ! cmp -s "$f" "$checked_in/$name"; then
    echo "FAIL: $name differs from docs/algorithms/$name"
    diff "$checked_in/$name" "$f" | head -20
    rc=1
  fi
done
for f in "$checked_in"/*.svg; do
  [ -f "$out/$(basename "$f")" ] || { echo "FAIL: docs/algorithms/$(basename "$f") is no longer drawn"; rc=1; }
done
if [ "$rc" -ne 0 ]; then
  echo "regenerate: cmake --build build --target rl-algorithm-pictures &&" \
       "build/tools/algorithm_pictures/rl-algorithm-pictures docs/algorithms"
  exit 1
fi
echo "ok: $(ls "$out" | wc -l) pictures match"
