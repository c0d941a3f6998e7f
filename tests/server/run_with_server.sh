#!/usr/bin/env bash
# Starts rl-server on a free loopback port, runs a client script against it with RL_PORT set,
# then stops the server with SIGTERM and checks that it exited 0.
# Usage: run_with_server.sh /path/to/rl-server script.sh [server flags...]
set -uo pipefail
server=$1
script=$2
shift 2
out=$(mktemp)
"$server" --port 0 --threads 2 --quiet "$@" >"$out" &
pid=$!
port=""
for _ in $(seq 1 400); do  # up to 20 s: a busy machine starts it slowly
  port=$(sed -n 's/^rl-server ready: listening on .*:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] && break
  sleep 0.05
done
if [ -z "$port" ]; then
  echo "rl-server did not start"
  kill -9 "$pid" 2>/dev/null
  exit 1
fi
export RL_PORT=$port RL_SERVER_PID=$pid
timeout 100 bash "$script"
rc=$?
kill -TERM "$pid"
wait "$pid"
server_rc=$?
rm -f "$out"
if [ "$rc" -ne 0 ]; then
  echo "client script failed with $rc"
  exit "$rc"
fi
if [ "$server_rc" -ne 0 ]; then
  echo "rl-server exited with $server_rc after SIGTERM"
  exit 1
fi
echo "ok"
