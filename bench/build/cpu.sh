#!/usr/bin/env bash
# The main build's cost as tools/test pays it on a fresh clone: for each git revision given
# (default: main and HEAD), a fresh Release configure and `cmake --build -j$(nproc)` with ccache
# off, then the build's CPU-seconds (user + sys of the whole build), its wall time, and the
# per-target wall-seconds of its steps from .ninja_log (at -j1 on a quiet machine these are the
# targets' CPU-seconds). Revisions run back to back, in the order given.
# Usage: bench/build/cpu.sh [--jobs N] [REV...]     (work dirs under ${TMPDIR:-/tmp}/rl-build-cpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=$(nproc)
if [ "${1:-}" = "--jobs" ]; then jobs=$2; shift 2; fi
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(main HEAD)
work=${TMPDIR:-/tmp}/rl-build-cpu
mkdir -p "$work"
export CCACHE_DISABLE=1
for rev in "${revs[@]}"; do
  sha=$(git rev-parse --short "$rev")
  src=$work/src-$sha bld=$work/build-$sha
  rm -rf "$src" "$bld" && mkdir -p "$src"
  git archive "$sha" | tar -x -C "$src"
  cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRL_BUILD_TESTS=ON \
    -DRL_BUILD_BENCH=ON >"$work/configure-$sha.log"
  /usr/bin/time -f '%U %S %e' -o "$work/time-$sha" cmake --build "$bld" -j"$jobs" \
    >"$work/build-$sha.log"
  read -r user sys wall <"$work/time-$sha"
  echo "== $rev ($sha): $(echo "$user + $sys" | bc) CPU-s (user $user, sys $sys), wall $wall s, -j$jobs"
  # Per target: one ninja edge can have several outputs (a link and its test list): count it once.
  awk -F'\t' '!/^#/ && !seen[$1 FS $2]++ {
      t = ($2 - $1) / 1000; o = $4
      if (o ~ /CMakeFiles\//) { split(o, a, "CMakeFiles/"); split(a[2], b, "/"); o = a[1] b[1] }
      sum[o] += t; total += t }
    END { for (o in sum) if (sum[o] >= 5) printf "%8.1f  %s\n", sum[o], o
          printf "%8.1f  (all steps)\n", total }' "$bld/.ninja_log" | sort -rn | head -25
done
