#!/usr/bin/env bash
# Instructions per token-bucket check and per bare absl::flat_hash_map find+update (alone, and
# under a sharded mutex: the locked floor), counted by callgrind (independent of machine load,
# unlike core_bench's times).
# Usage: bench/core/icount.sh [path/to/check_icount] [keys] [iterations] [limits per check: 1|2, or log: a sliding log] [nohot: LimiterOptions::hot_keys off]
set -euo pipefail
bin=${1:-build/bench/core/check_icount}
keys=${2:-1000}
iters=${3:-200000}
limits=${4:-1}
hot=${5:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$keys" "$iters" "$limits" $hot >/dev/null 2>&1
# Every function listed: at 1 M keys the setup leaves a loop below the default threshold's cut.
callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null |
  awk -v it="$iters" '/RunChecks|RunBare/ { gsub(",", "", $1);
    name = /RunChecks/ ? "check" : /RunBareLocked/ ? "locked" : "bare"; v[name] = $1 / it }
    END { printf "instructions per check %.0f, bare map %.0f, ratio %.2f", v["check"], v["bare"],
      v["check"] / v["bare"];
      # A check_icount from before the locked floor has no RunBareLocked.
      if (v["locked"] > 0) printf "; bare map under a sharded mutex %.0f, check / that %.2f",
        v["locked"], v["check"] / v["locked"];
      printf "\n" }'
