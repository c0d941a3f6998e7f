#!/usr/bin/env bash
# The framework adapters side by side, in one run: Flask-Limiter with its Redis storage vs the rl
# storage (integrations/python), express-rate-limit with rate-limit-redis vs the rl store
# (integrations/node); WORKERS concurrent workers on one hot key and on KEYS keys; decisions per
# second, requests admitted beyond the limit, and the commands (round trips) each decision cost,
# counted in the clients. Starts its own rl-server and redis-server
# with rl.so (which also serves the Redis baselines) on free loopback ports.
# Writes its section of bench/RESULTS.md (report.py), and the JSON lines to
# bench/results/frameworks-python-node.jsonl.
# Usage: bench/integrations/side_by_side.sh [build dir]   env: WORKERS=4 SECONDS_PER_RUN=5 KEYS=100
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${RL_SERVER_PORT:-}" ]; then
  build=$(cd "${1:-$root/build}" && pwd)
  exec "$root/integrations/with_servers.sh" --both "$build/server/rl-server" \
    "$build/module/rl.so" bash "$0"
fi
workers=${WORKERS:-4}
seconds=${SECONDS_PER_RUN:-5}
keys=${KEYS:-100}
hot_limit=200  # per hour: reached early in the run, and no window ends during it
many_limit=3   # per hour and key
here="$root/bench/integrations"

# row <label> <command...>: one run, its JSON line with the label added.
row() {
  local label=$1
  shift
  "$@" | /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); r["label"] = sys.argv[1]
print(json.dumps(r))' "$label"
}

py() { /usr/bin/python3 "$here/flask_limiter_bench.py" "$@"; }
js() { node "$here/express_bench.mjs" "$@"; }
rows() {
for scenario in hot many; do
  if [ $scenario = hot ]; then limit=$hot_limit; else limit=$many_limit; fi
  row "Flask-Limiter, Redis storage, moving-window" \
    py "redis://127.0.0.1:$RL_REDIS_PORT" moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, rl-moving-window, rl-server" \
    py "rl://127.0.0.1:$RL_SERVER_PORT" rl-moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, rl-moving-window, Redis+rl.so" \
    py "rl://127.0.0.1:$RL_REDIS_PORT" rl-moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, limits' moving-window, rl-server" \
    py "rl://127.0.0.1:$RL_SERVER_PORT" moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, Redis storage, fixed-window" \
    py "redis://127.0.0.1:$RL_REDIS_PORT" fixed-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, rl-fixed-window, rl-server" \
    py "rl://127.0.0.1:$RL_SERVER_PORT" rl-fixed-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, limits' fixed-window, rl-server" \
    py "rl://127.0.0.1:$RL_SERVER_PORT" fixed-window "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rate-limit-redis (fixed)" \
    js redis "$RL_REDIS_PORT" "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rl store FIXED_WINDOW, rl-server" \
    js rl-fixed "$RL_SERVER_PORT" "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rl store FIXED_WINDOW, Redis+rl.so" \
    js rl-fixed "$RL_REDIS_PORT" "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rl store SLIDING_LOG, rl-server" \
    js rl-sliding "$RL_SERVER_PORT" "$workers" "$seconds" $scenario $limit $keys
done
}

jsonl="$root/bench/results/frameworks-python-node.jsonl"
rows | tee "$jsonl"
/usr/bin/python3 "$here/report.py" "$root/bench/RESULTS.md" \
  "$root/bench/results/sections/frameworks-python-node.md" \
  "WORKERS=$workers SECONDS_PER_RUN=$seconds KEYS=$keys bench/integrations/side_by_side.sh" \
  "$workers" "$seconds" "limits: $hot_limit per hour on the hot key, $many_limit per hour on each of $keys keys" \
  <"$jsonl" \
  >/dev/null
echo "wrote bench/RESULTS.md (section frameworks-python-node) and $jsonl"
