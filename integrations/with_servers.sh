#!/usr/bin/env bash
# Runs a framework adapter's test command against both of rl's servers, one after the other: a
# real rl-server and a real redis-server with rl.so, each on a free loopback port picked now.
# The command sees RL_HOST, RL_PORT and RL_TARGET (rl-server | redis+rl.so); it fails the run
# with a non-zero exit, and 77 from it means "skipped" (a missing framework package).
# With --both the command runs once, with both servers up: RL_SERVER_PORT and RL_REDIS_PORT (the
# benchmarks compare them, and Redis's own storage, in one run).
# Usage: with_servers.sh [--both] <rl-server> <rl.so> <command> [args...]
set -uo pipefail
both=0
[ "${1:-}" = "--both" ] && { both=1; shift; }
server=$(realpath "$1")
module=$(realpath "$2")
shift 2

work=$(mktemp -d /tmp/rl-integrations-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for <seconds> <command...>: polls until the command succeeds (the machine may be busy).
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.05
  done
}

start_rl_server() {
  "$server" --port 0 --threads 1 --quiet >"$work/rl-server.log" 2>&1 &
  pids+=($!)
  disown
  ready() { grep -q '^rl-server ready: listening on' "$work/rl-server.log"; }
  wait_for 30 ready || { echo "rl-server did not start"; cat "$work/rl-server.log"; exit 1; }
  rl_port=$(sed -n 's/^rl-server ready: listening on .*:\([0-9]*\)$/\1/p' "$work/rl-server.log")
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A picked port may be taken before redis-server binds it (parallel tests): three tries.
start_redis() {
  local port pid
  for _ in 1 2 3; do
    port=$(free_port)
    printf 'port %s\nbind 127.0.0.1\nsave ""\nappendonly no\ndir %s\nloadmodule %s\n' \
      "$port" "$work" "$module" >"$work/redis.conf"
    redis-server "$work/redis.conf" >"$work/redis.log" 2>&1 &
    pid=$!
    disown
    # Ours answers INFO with its own pid (not another server on a reused port).
    ours() { redis-cli -p "$port" INFO server | grep -q "^process_id:$pid"; }
    if wait_for 30 ours; then
      pids+=("$pid")
      redis_port=$port
      return 0
    fi
    kill -9 "$pid" 2>/dev/null
    grep -q "Address already in use" "$work/redis.log" || break
  done
  echo "redis-server with rl.so did not start" >&2
  cat "$work/redis.log" >&2
  return 1
}

command -v redis-server >/dev/null || { echo "redis-server not installed"; exit 77; }
start_rl_server
start_redis || exit 1

if [ $both -eq 1 ]; then
  RL_HOST=127.0.0.1 RL_SERVER_PORT=$rl_port RL_REDIS_PORT=$redis_port "$@"
  exit $?
fi
status=0
for target in "rl-server:$rl_port" "redis+rl.so:$redis_port"; do
  echo "=== ${target%%:*} (port ${target##*:})"
  RL_HOST=127.0.0.1 RL_PORT=${target##*:} RL_TARGET=${target%%:*} "$@"
  rc=$?
  [ $rc -eq 77 ] && exit 77
  [ $rc -eq 0 ] || { echo "FAIL against ${target%%:*} (exit $rc)"; status=1; }
done
exit $status
