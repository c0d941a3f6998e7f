#!/usr/bin/env bash
# Runs one of the client snippets in examples/clients/ against the real rl-server, through the
# three states a service meets: limiter up (allowed, then 429 with Retry-After), limiter hung
# (SIGSTOP: no reply within the timeout) and limiter stopped (connection refused). Down, a
# fail-open route answers 200 without rate-limit headers and a fail-closed one 503 with
# Retry-After 1, and the outage is logged once, not once per request.
# Usage: clients_test.sh <rl-server> <python|php|ioredis|node_redis>
set -uo pipefail
server=$1
which=$2
clients=$(cd "$(dirname "$0")/../../examples/clients" && pwd)
case "$which" in
  python)
    /usr/bin/python3 -c "import redis" 2>/dev/null || { echo "python3-redis not installed"; exit 77; }
    cmd=(/usr/bin/python3 "$clients/python_redis_py.py") ;;
  php)
    php -r 'exit(extension_loaded("redis") ? 0 : 1);' 2>/dev/null || { echo "php-redis not installed"; exit 77; }
    cmd=(php "$clients/php_phpredis.php") ;;
  ioredis | node_redis)
    command -v node >/dev/null || { echo "node not installed"; exit 77; }
    # tools/setup installs them (npm ci); a missing folder is a setup failure, not a skip.
    [ -d "$clients/node/node_modules" ] || { echo "FAIL: no $clients/node/node_modules: run tools/setup"; exit 1; }
    cmd=(node "$clients/node/$which.mjs") ;;
  *) echo "unknown client $which"; exit 2 ;;
esac

work=$(mktemp -d /tmp/rl-clients-test-XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && { kill -CONT "$pid"; kill -9 "$pid"; } 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL ($which, $phase): $*"
  echo "--- stdout"; cat "$work/out" 2>/dev/null
  echo "--- stderr"; cat "$work/err" 2>/dev/null
  exit 1
}
# run <timeout ms> <routes...>: the snippet's stdout in $work/out, stderr in $work/err. The Node
# snippets wait up to RL_STARTUP_WAIT_MS for their first connection: long while the limiter is
# up (a loaded machine), short when it cannot come.
run() {
  local timeout_ms=$1
  shift
  RL_PORT=$port RL_TIMEOUT_MS=$timeout_ms RL_STARTUP_WAIT_MS=$((timeout_ms * 2)) timeout 60 \
    "${cmd[@]}" "$which" "$@" >"$work/out" 2>"$work/err" || fail "exited $?"
}
expect_lines() {
  local got
  got=$(cat "$work/out")
  [[ "$got" =~ ^$1$ ]] || fail "expected lines matching: $1"
}
outage_logged_once() {
  local n
  n=$(grep -c "unreachable" "$work/err")
  [ "$n" -eq 1 ] || fail "expected one 'unreachable' log line, got $n"
}

phase=start
"$server" --port 0 --threads 1 --quiet >"$work/server" &
pid=$!
port=""
for _ in $(seq 1 400); do  # up to 20 s: a busy machine starts it slowly
  port=$(sed -n 's/^rl-server ready: listening on .*:\([0-9]*\)$/\1/p' "$work/server")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || fail "rl-server did not start"

phase=up  # TOKEN_BUCKET 2 1m: two allowed, the third denied for ~30 s; login has its own limit
run 5000 search search search login
expect_lines $'search 200 remaining=1\nsearch 200 remaining=0\nsearch 429 retry-after=(29|30)\nlogin 200 remaining=1'
[ ! -s "$work/err" ] || fail "logged while the limiter was up"

phase=hung  # the process is stopped: connections are accepted by the kernel, nothing replies
kill -STOP "$pid"
run 300 search login search
expect_lines $'search 200 limiter=down\nlogin 503 retry-after=1 limiter=down\nsearch 200 limiter=down'
outage_logged_once
kill -CONT "$pid"

phase=stopped
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "rl-server exited $rc after SIGTERM"
run 300 search login search
expect_lines $'search 200 limiter=down\nlogin 503 retry-after=1 limiter=down\nsearch 200 limiter=down'
outage_logged_once
echo "ok: $which up, hung and stopped"
