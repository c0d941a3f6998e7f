#!/usr/bin/env bash
# One hot key, 1 and 2 threads, side by side in one run: check_threads on a token-bucket limit
# with the lock-free path of hot keys (tb), the same with it off (tb-locked: every check takes the
# shard lock), and the same two for GCRA (gcra, gcra-locked): every check allowed, so every check
# writes. Then the same token bucket over its limit (tb-denied, tb-denied-locked: 1 per hour, used
# up before the timed part, so every check is denied and writes nothing, as a service-wide limit
# hit by millions of checks a second mostly is). The runs alternate so all share
# the machine's load. Prints the median checks per second of each over the repetitions and the
# 2-thread / 1-thread ratio, and the median CPU ns per check (user + system of the process: what
# contention adds, less blurred by the load than wall time); then, per mode, the futex system
# calls per check with 2 threads (strace -c -f), the same with both threads on one CPU (taskset
# -c 0: a lock holder is then preempted with the lock, so the locked path parks), and the
# instructions per check with 1 thread (callgrind, RunChecks inclusive).
# Usage: bench/core/hotkey.sh [check_threads] [repetitions] [checks per thread]
set -euo pipefail
bin=${1:-build/bench/core/check_threads}
reps=${2:-5}
checks=${3:-1000000}
modes=(tb tb-locked gcra gcra-locked tb-denied tb-denied-locked)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
uptime
for rep in $(seq "$reps"); do
  for m in "${modes[@]}"; do
    for t in 1 2; do
      "$bin" "$t" 1 "$checks" "$m" | awk '{ print $NF; print $(NF - 2) >"/dev/stderr" }' \
        >>"$dir/$m.$t" 2>>"$dir/$m.$t.cpu"
    done
  done
done
uptime
python3 - "$dir" "${modes[@]}" <<'PY'
import statistics, sys
d, modes = sys.argv[1], sys.argv[2:]
print(f"{'mode':<12} {'1T checks/s':>12} {'2T checks/s':>12} {'2T/1T':>6} {'1T cpu ns':>10} "
      f"{'2T cpu ns':>10}   (medians of runs)")
med = lambda f: statistics.median(float(x) for x in open(f))
for m in modes:
    one, two = med(f"{d}/{m}.1"), med(f"{d}/{m}.2")
    c1, c2 = med(f"{d}/{m}.1.cpu"), med(f"{d}/{m}.2.cpu")
    print(f"{m:<12} {one:>12.0f} {two:>12.0f} {two / one:>6.2f} {c1:>10.1f} {c2:>10.1f}")
PY
for m in "${modes[@]}"; do
  strace -c -f -e trace=futex -o "$dir/strace.$m" "$bin" 2 1 "$checks" "$m" >/dev/null
  calls=$(awk '$NF == "futex" { print $4 }' "$dir/strace.$m")
  strace -c -f -e trace=futex -o "$dir/strace1.$m" taskset -c 0 "$bin" 2 1 "$checks" "$m" >/dev/null
  calls1=$(awk '$NF == "futex" { print $4 }' "$dir/strace1.$m")
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$m" "$bin" 1 1 200000 "$m" \
    >/dev/null 2>&1
  instr=$(callgrind_annotate --inclusive=yes "$dir/cg.$m" 2>/dev/null |
    awk '/RunChecks/ { gsub(",", "", $1); print $1; exit }')
  python3 -c "import sys; c, c1, i, n = (int(x or 0) for x in sys.argv[1:5]);
print(f'{sys.argv[5]:<12} futex per check (2T) {c / (2 * n):.6f}  (2T on one CPU) {c1 / (2 * n):.6f}'
      f'   instructions per check (1T) {i / 200000:.0f}')" \
    "${calls:-0}" "${calls1:-0}" "${instr:-0}" "$checks" "$m"
done
