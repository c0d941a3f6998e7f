#!/usr/bin/env bash
# Many-core figures of the check path, side by side in one run: core_bench's token-bucket check
# at 1 k / 100 k / 1 M distinct keys and on one hot key, 1 and 2 threads, next to the bare map
# (and the bare map under a mutex for the hot key), and next to the floors of a synchronized
# update (BM_ShardLockedMap: the bare map sharded under uncontended mutexes; BM_CasMap: one
# compare-and-swap per update), for this build and optionally a base build
# (say, main's), the two alternating run by run so both share the machine's load. Prints the
# medians of the repetitions: check / bare map and check / each floor per size (a base build
# without the floors, main before they existed, gets them from this build's run), 2-thread /
# 1-thread throughput (items per second), and the futex system calls per check with 2 threads
# on one hot key and on 1 k keys
# (perf stat -e syscalls:sys_enter_futex over check_threads, next to core_bench; the base's
# check_threads from $BASE_CHECK_THREADS).
# Usage: bench/core/cores.sh [core_bench] [base core_bench or ""] [repetitions]
set -euo pipefail
bin=${1:-build/bench/core/core_bench}
base=${2:-}
reps=${3:-3}
filter='BM_BareMap/|BM_BareMapLocked/|BM_ShardLockedMap/|BM_CasMap/|BM_Check/TOKEN_BUCKET/|'\
'BM_Check/TOKEN_BUCKET_HOT_KEY/'
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
uptime
builds=(new)
[ -n "$base" ] && builds+=(base)
for rep in $(seq "$reps"); do
  for b in "${builds[@]}"; do
    exe=$bin
    [ "$b" = base ] && exe=$base
    "$exe" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_format=json \
      >"$dir/$b.$rep.json" 2>/dev/null
  done
done
# Futex calls per check: check_threads (a fixed number of checks, 2 threads) under perf stat,
# on one hot key and on 1000 keys per thread.
counter=${bin%/*}/check_threads
base_counter=${BASE_CHECK_THREADS:-}
for b in "${builds[@]}"; do
  exe=$counter
  [ "$b" = base ] && exe=$base_counter
  [ -x "$exe" ] || continue
  for keys in 1 1000; do
    perf stat -x, -e syscalls:sys_enter_futex -o "$dir/$b.futex.$keys" "$exe" 2 "$keys" 2000000 \
      >/dev/null
  done
done
uptime
python3 - "$dir" "$reps" "${builds[@]}" <<'PY'
import json, re, statistics, sys
d, reps, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(b):
    per = {}
    for rep in range(1, reps + 1):
        for r in json.load(open(f"{d}/{b}.{rep}.json"))["benchmarks"]:
            m = re.match(r"BM_(BareMapLocked|BareMap|ShardLockedMap|CasMap|Check/(\w+))/(\d+)/"
                         r"real_time/threads:(\d)", r["name"])
            if not m:
                continue
            alg = m.group(2) or m.group(1)
            per.setdefault((alg, int(m.group(3)), int(m.group(4))), []).append(
                (r["cpu_time"], r["items_per_second"]))
    return {k: (statistics.median(c for c, _ in v), statistics.median(i for _, i in v))
            for k, v in per.items()}
first = load(builds[0])
for b in builds:
    m = load(b)
    print(f"-- {b}: medians of {reps} runs (cpu ns per check per thread; 2T/1T = items/s;"
          f" lock = BM_ShardLockedMap, cas = BM_CasMap)")
    print(f"{'keys':>9}{'check ns':>10}{'bare ns':>9}{'lock ns':>9}{'cas ns':>8}{'/bare':>7}"
          f"{'/lock':>7}{'/cas':>6}{'check 2T/1T':>13}{'bare 2T/1T':>12}{'lock 2T/1T':>12}")
    for n in (1000, 100000, 1000000):
        c1, b1 = m[("TOKEN_BUCKET", n, 1)], m[("BareMap", n, 1)]
        c2, b2 = m[("TOKEN_BUCKET", n, 2)], m[("BareMap", n, 2)]
        # The floors: this build's own when it has them, else the first build's (same run).
        f = m if ("ShardLockedMap", n, 1) in m else first
        l1, l2, a1 = f[("ShardLockedMap", n, 1)], f[("ShardLockedMap", n, 2)], f[("CasMap", n, 1)]
        print(f"{n:>9}{c1[0]:>10.1f}{b1[0]:>9.1f}{l1[0]:>9.1f}{a1[0]:>8.1f}{c1[0] / b1[0]:>7.2f}"
              f"{c1[0] / l1[0]:>7.2f}{c1[0] / a1[0]:>6.2f}{c2[1] / c1[1]:>13.2f}"
              f"{b2[1] / b1[1]:>12.2f}{l2[1] / l1[1]:>12.2f}")
    h1, h2 = m[("TOKEN_BUCKET_HOT_KEY", 1, 1)], m[("TOKEN_BUCKET_HOT_KEY", 1, 2)]
    l1, l2 = m[("BareMapLocked", 1, 1)], m[("BareMapLocked", 1, 2)]
    print(f"hot key: {h1[1] / 1e6:.2f} M/s 1T, {h2[1] / 1e6:.2f} M/s 2T, 2T/1T {h2[1] / h1[1]:.2f}"
          f" (bare map under a mutex: {l2[1] / l1[1]:.2f})")
    for keys in (1, 1000):
        try:
            lines = open(f"{d}/{b}.futex.{keys}").read().splitlines()
        except OSError:
            continue
        futex = next(int(l.split(",")[0]) for l in lines if "sys_enter_futex" in l)
        print(f"futex calls per check, 2 threads, {'one hot key' if keys == 1 else '1000 keys each'}"
              f": {futex / 4e6:.5f} ({futex} calls / 4 M checks)")
PY
