#!/usr/bin/env bash
# Quick side-by-side of rl-server and redis-server on free loopback ports: both servers pinned to
# core 0 (rl-server with one I/O thread, like Redis), redis-benchmark pinned to core 1.
# Prints requests per second and the ratios the server issue asks for. bench/run is the full
# harness; this is the quick check. Usage: bench/server/side_by_side.sh [rl-server] [requests]
set -euo pipefail
cd "$(dirname "$0")/../.."
rl=${1:-build/server/rl-server}
n=${2:-300000}
free_port() { /usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
rp=$(free_port)
out=$(mktemp)
taskset -c 0 redis-server --port "$rp" --bind 127.0.0.1 --save "" --appendonly no \
  --loglevel warning >/dev/null 2>&1 &
redis_pid=$!
taskset -c 0 "$rl" --port 0 --threads 1 --quiet >"$out" &
rl_pid=$!
trap 'kill $redis_pid $rl_pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do
  redis-cli -p "$rp" PING >/dev/null 2>&1 && grep -q ready "$out" && break
  sleep 0.05
done
lp=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$out")
sha=$(redis-cli -p "$rp" SCRIPT LOAD "$(cat bench/lua/token_bucket.lua)")
rps() {
  taskset -c 1 redis-benchmark -q -n "$n" -c 50 -r 100000 "$@" 2>/dev/null | tr '\r' '\n' \
    | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}
redis_ping=$(rps -p "$rp" -P 1 PING)
rl_ping=$(rps -p "$lp" -P 1 PING)
rl_check1=$(rps -p "$lp" -P 1 RL.CHECK key:__rand_int__ TOKEN_BUCKET 100 1s)
redis_incr=$(rps -p "$rp" -P 16 INCR ctr:__rand_int__)
redis_lua=$(rps -p "$rp" -P 16 EVALSHA "$sha" 1 tb:__rand_int__ 100 1000 1)
rl_check16=$(rps -p "$lp" -P 16 RL.CHECK key:__rand_int__ TOKEN_BUCKET 100 1s)
ratio() { /usr/bin/python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "redis PING -P1            $redis_ping"
echo "rl    PING -P1            $rl_ping"
echo "rl    RL.CHECK -P1        $rl_check1   (x$(ratio "$rl_check1" "$redis_ping") Redis PING; target >= 0.9)"
echo "redis INCR -P16           $redis_incr"
echo "redis EVALSHA bucket -P16 $redis_lua"
echo "rl    RL.CHECK -P16       $rl_check16   (x$(ratio "$rl_check16" "$redis_lua") EVALSHA, target >= 5;" \
     "x$(ratio "$rl_check16" "$redis_incr") INCR, target >= 1)"
