#!/usr/bin/env bash
# Runs core_bench and prints, per algorithm and key count, the check cost next to the bare
# absl::flat_hash_map find+update (ratio = check / bare, by CPU time per operation) and the
# 2-thread speedup (items per second with 2 threads / with 1), plus the memory figures. The
# speedup needs two idle cores; "cpu 2T/1T" (CPU time per check with 2 threads over 1 thread)
# shows contention independently of machine load: 1.0 means the threads do not slow each other.
# With --benchmark_repetitions=N every figure is the median of the N runs. The last lines compare
# the 2-thread speedups with issue 15's targets: distinct keys >= 1.8x (beside the bare map's own,
# which shows what the machine allows), one hot key >= 0.5x (TOKEN_BUCKET_HOT_KEY, beside the bare
# map under a mutex: what one shared entry allows).
# Usage: bench/core/ratios.sh [path/to/core_bench] [extra benchmark flags...]
set -euo pipefail
bin=${1:-build/bench/core/core_bench}
shift || true
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$bin" --benchmark_format=json --benchmark_min_time=0.5 "$@" >"$json"
python3 - "$json" <<'PY'
import json, re, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
cpu, ips, mem = {}, {}, []
for r in runs:
    # Repetitions: keep the median (it comes after the runs, so it overwrites them).
    if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
        continue
    m = re.match(r"BM_(BareMapLocked|BareMap|Check/([\w+]+))/(\d+)/real_time/threads:(\d)", r["name"])
    if m:
        alg = m.group(2) or ("BARE_MAP_LOCKED" if m.group(1) == "BareMapLocked" else "BARE_MAP")
        key = (alg, int(m.group(3)), int(m.group(4)))
        cpu[key] = r["cpu_time"]  # ns per op per thread
        ips[key] = r.get("items_per_second", 0)
    elif "Memory" in r["name"] and r.get("run_type") != "aggregate":
        extra = {k: v for k, v in r.items() if k.endswith(("per_key", "per_request"))}
        mem.append((r["name"], extra))
print(f"{'algorithm':<16}{'keys':>9}{'ns/check':>10}{'bare ns':>9}{'ratio':>7}{'2T/1T':>7}"
      f"{'cpu 2T/1T':>10}")
for (alg, n, t) in sorted(k for k in cpu if k[2] == 1 and not k[0].startswith("BARE_MAP")):
    bare = cpu.get(("BARE_MAP", n, 1), float("nan"))
    two = ips.get((alg, n, 2), 0) / max(ips[(alg, n, 1)], 1)
    cpu2 = cpu.get((alg, n, 2), 0) / cpu[(alg, n, 1)]
    print(f"{alg:<16}{n:>9}{cpu[(alg, n, 1)]:>10.1f}{bare:>9.1f}{cpu[(alg, n, 1)] / bare:>7.2f}"
          f"{two:>7.2f}{cpu2:>10.2f}")
for n in sorted({k[1] for k in cpu if k[0] == "BARE_MAP"}):
    two = ips.get(("BARE_MAP", n, 2), 0) / max(ips.get(("BARE_MAP", n, 1), 1), 1)
    cpu2 = cpu.get(("BARE_MAP", n, 2), 0) / cpu[("BARE_MAP", n, 1)]
    print(f"{'BARE_MAP':<16}{n:>9}{cpu[('BARE_MAP', n, 1)]:>10.1f}{'':>9}{'':>7}{two:>7.2f}"
          f"{cpu2:>10.2f}")
for name, extra in mem:
    print(name, " ".join(f"{k}={v:.2f}" for k, v in extra.items()))
def speedup(alg, n):
    one = ips.get((alg, n, 1), 0)
    return ips.get((alg, n, 2), 0) / one if one else float("nan")
print("2 threads / 1 thread (checks per second):")
for n in sorted({k[1] for k in cpu if k[0] == "TOKEN_BUCKET"}):
    print(f"  distinct keys, {n:>9} keys: TOKEN_BUCKET {speedup('TOKEN_BUCKET', n):.2f}x "
          f"(target >= 1.8x), bare map {speedup('BARE_MAP', n):.2f}x")
print("two limits / one limit (time per check, 1 thread):")
for n in sorted({k[1] for k in cpu if k[0] == "TOKEN_BUCKET+FIXED_WINDOW"}):
    one = cpu.get(("TOKEN_BUCKET", n, 1))
    if one:
        print(f"  {n:>9} keys: {cpu[('TOKEN_BUCKET+FIXED_WINDOW', n, 1)] / one:.2f}x (target <= 1.5x)")
if ("TOKEN_BUCKET_HOT_KEY", 1, 1) in ips:
    print(f"  one hot key: TOKEN_BUCKET {speedup('TOKEN_BUCKET_HOT_KEY', 1):.2f}x (target >= 0.5x), "
          f"bare map under a mutex {speedup('BARE_MAP_LOCKED', 1):.2f}x")
PY
