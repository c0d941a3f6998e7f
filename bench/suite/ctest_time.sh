#!/usr/bin/env bash
# Where the test command's ctest time goes, on a fresh clone: clones REV (a commit of this
# repository) into a scratch directory, builds it as tools/test does (Release, tests and bench),
# then runs ctest as tools/test does and prints its wall time, the CPU-seconds of the whole run
# (every test and what the tests build: the clang fuzz trees, the add_subdirectory consumer) and
# the longest tests. With --loaded, two busy loops keep both cores busy meanwhile and ctest runs
# PASSES times in the same build directory (the first pass is the fresh one), each reported.
# Usage: bench/suite/ctest_time.sh [--loaded] [--passes N] [--keep] REV [REV...]
#   e.g. bench/suite/ctest_time.sh dc6e8c7 suitetests     (base and branch, one after the other)
#        bench/suite/ctest_time.sh --loaded --passes 3 suitetests
# Prints per REV: "REV pass P: ctest W s wall, C CPU-s, F failed" and the 12 longest tests.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
loaded="" passes=1 keep=""
revs=()
while [ $# -gt 0 ]; do
  case $1 in
    --loaded) loaded=1; shift ;;
    --passes) passes=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) revs+=("$1"); shift ;;
  esac
done
[ ${#revs[@]} -gt 0 ] || { echo "usage: $0 [--loaded] [--passes N] [--keep] REV..." >&2; exit 2; }
scratch=$(mktemp -d /tmp/ctest-time-XXXXXX)
busy=()
stop_busy() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; busy=(); }
cleanup() { stop_busy; [ -n "$keep" ] || rm -rf "$scratch"; }
trap cleanup EXIT

for rev in "${revs[@]}"; do
  src=$scratch/$rev
  git clone -q --no-checkout "$repo" "$src"
  git -C "$src" checkout -q "$(git -C "$repo" rev-parse "$rev")"
  "$src/tools/setup" >/dev/null
  cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRL_BUILD_TESTS=ON \
    -DRL_BUILD_BENCH=ON >/dev/null
  build_start=$(date +%s)
  cmake --build "$src/build" -j"$(nproc)" >"$scratch/$rev.build.log" 2>&1
  echo "$rev build: $(($(date +%s) - build_start)) s wall"
  if [ -n "$loaded" ]; then
    for _ in 1 2; do (while :; do :; done) & busy+=($!); done
  fi
  for pass in $(seq 1 "$passes"); do
    log=$scratch/$rev.ctest$pass.log
    (cd "$src/build" && /usr/bin/time -f "%e %U %S" -o "$scratch/$rev.time$pass" \
      ctest --output-on-failure -j"$(($(nproc) + 1))" >"$log" 2>&1) || true
    read -r wall user sys <"$scratch/$rev.time$pass"
    failed=$(grep -c -E '\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception' "$log" || true)
    cpu=$(awk "BEGIN{print $user + $sys}")
    echo "$rev pass $pass: ctest $wall s wall, $cpu CPU-s, $failed failed" \
      "(load $(cut -d' ' -f1-3 /proc/loadavg))"
    grep -E 'Test +#' "$log" | awk '{for(i=1;i<=NF;i++) if($i=="sec") print "  " $(i-1), $4}' |
      sort -rn | head -12
    grep -E '\*\*\*Failed|\*\*\*Timeout' "$log" | sed 's/^/  FAILED /' || true
  done
  stop_busy
done
