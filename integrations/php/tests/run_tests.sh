#!/usr/bin/env bash
# Runs the PHP adapter's tests (PHPUnit, Debian's phpunit) against a real rl-server on a free
# loopback port and a real redis-server with rl.so on a unix socket, both started here and
# stopped on exit. Exit 77 (skipped) only when php itself is missing.
# Usage: run_tests.sh <rl-server> <rl.so> [phpunit arguments...]
set -uo pipefail
server=$(realpath "$1")
module=$(realpath "$2")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
command -v php >/dev/null || { echo "php not installed"; exit 77; }
for need in phpunit redis-server; do
  command -v "$need" >/dev/null || { echo "FAIL: $need not installed: run tools/setup"; exit 1; }
done
php -r 'exit(extension_loaded("redis") && extension_loaded("pcntl") ? 0 : 1);' ||
  { echo "FAIL: php-redis (and pcntl) not loaded: run tools/setup"; exit 1; }
[ -f /usr/share/php/Symfony/Component/RateLimiter/autoload.php ] || [ -f "$here/../vendor/autoload.php" ] ||
  { echo "FAIL: php-symfony-rate-limiter not installed: run tools/setup"; exit 1; }

work=$(mktemp -d /tmp/rl-php-test-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

"$server" --port 0 --threads 2 --quiet >"$work/server" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 1 400); do
  port=$(sed -n 's/^rl-server ready: listening on .*:\([0-9]*\)$/\1/p' "$work/server")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "FAIL: rl-server did not start"; cat "$work/server"; exit 1; }

redis-server --port 0 --unixsocket "$work/redis.sock" --save "" --appendonly no --dir "$work" \
  --loadmodule "$module" >"$work/redis.log" 2>&1 &
pids+=($!)
redis_pid=$!
for _ in $(seq 1 400); do
  [ "$(redis-cli -s "$work/redis.sock" PING 2>/dev/null)" = PONG ] && break
  kill -0 "$redis_pid" 2>/dev/null || break
  sleep 0.05
done
[ "$(redis-cli -s "$work/redis.sock" PING 2>/dev/null)" = PONG ] ||
  { echo "FAIL: redis-server with rl.so did not start"; cat "$work/redis.log"; exit 1; }

RL_SERVER_PORT=$port RL_REDIS_SOCKET="$work/redis.sock" RL_SERVER_BIN="$server" \
  timeout 300 phpunit --bootstrap "$here/bootstrap.php" --do-not-cache-result "$@" "$here"
