#!/usr/bin/env bash
# The framework adapters side by side, in one run: Flask-Limiter with its Redis storage vs the rl
# storage (integrations/python), express-rate-limit with rate-limit-redis vs the rl store
# (integrations/node); WORKERS concurrent workers on one hot key and on KEYS keys; decisions per
# second, requests admitted beyond the limit, and the commands each decision cost (the server's
# total_commands_processed over the run / requests). Starts its own rl-server and redis-server
# with rl.so (which also serves the Redis baselines) on free loopback ports.
# Usage: bench/integrations/side_by_side.sh [build dir]   env: WORKERS=4 SECONDS=5 KEYS=500
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${RL_SERVER_PORT:-}" ]; then
  build=$(cd "${1:-$root/build}" && pwd)
  exec "$root/integrations/with_servers.sh" --both "$build/server/rl-server" \
    "$build/module/rl.so" bash "$0"
fi
workers=${WORKERS:-4}
seconds=${SECONDS_PER_RUN:-${SECONDS:-5}}
keys=${KEYS:-500}
hot_limit=1000  # per hour: reached in the run, no window ends during it
many_limit=3    # per hour and key
here="$root/bench/integrations"

commands() { redis-cli -p "$1" INFO stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }

# row <label> <port> <command...>: one run, its JSON line extended by the measured commands.
row() {
  local label=$1 port=$2 before after out
  shift 2
  before=$(commands "$port")
  out=$("$@")
  after=$(commands "$port")
  /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[1]); r["label"] = sys.argv[2]
r["commands_per_decision"] = round((int(sys.argv[4]) - int(sys.argv[3]) - 1) / r["requests"], 2)
print(json.dumps(r))' "$out" "$label" "$before" "$after"
}

py() { /usr/bin/python3 "$here/flask_limiter_bench.py" "$@"; }
js() { node "$here/express_bench.mjs" "$@"; }
for scenario in hot many; do
  if [ $scenario = hot ]; then limit=$hot_limit; else limit=$many_limit; fi
  row "Flask-Limiter, Redis storage, moving-window" "$RL_REDIS_PORT" \
    py "redis://127.0.0.1:$RL_REDIS_PORT" moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, rl-moving-window, rl-server" "$RL_SERVER_PORT" \
    py "rl://127.0.0.1:$RL_SERVER_PORT" rl-moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, rl-moving-window, Redis+rl.so" "$RL_REDIS_PORT" \
    py "rl://127.0.0.1:$RL_REDIS_PORT" rl-moving-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, Redis storage, fixed-window" "$RL_REDIS_PORT" \
    py "redis://127.0.0.1:$RL_REDIS_PORT" fixed-window "$workers" "$seconds" $scenario $limit $keys
  row "Flask-Limiter, rl storage, rl-fixed-window, rl-server" "$RL_SERVER_PORT" \
    py "rl://127.0.0.1:$RL_SERVER_PORT" rl-fixed-window "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rate-limit-redis (fixed)" "$RL_REDIS_PORT" \
    js redis "$RL_REDIS_PORT" "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rl store FIXED_WINDOW, rl-server" "$RL_SERVER_PORT" \
    js rl-fixed "$RL_SERVER_PORT" "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rl store FIXED_WINDOW, Redis+rl.so" "$RL_REDIS_PORT" \
    js rl-fixed "$RL_REDIS_PORT" "$workers" "$seconds" $scenario $limit $keys
  row "express-rate-limit, rl store SLIDING_LOG, rl-server" "$RL_SERVER_PORT" \
    js rl-sliding "$RL_SERVER_PORT" "$workers" "$seconds" $scenario $limit $keys
done
