#!/usr/bin/env bash
# rl-server's instructions per request, counted by valgrind (callgrind), which a loaded machine
# does not change (unlike bench/server/cpu_per_request's CPU times): one server under callgrind
# per workload (PING; RL.CHECK of a token bucket given inline; the same token bucket as the named
# policy `api`), driven by redis-benchmark -P 16, minus a run that serves no request (start, the
# policy definition, shutdown). Prints instructions per request and the ratios to PING and to the
# inline check. Usage: bench/server/icount_per_request.sh [rl-server] [requests]
set -euo pipefail
bin=$(realpath "${1:-build/server/rl-server}")
n=${2:-200000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
key='rl:bench:tenant:sssssssssss:__rand_int__'
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# One server under callgrind running `$@` (a redis-benchmark command, or nothing); prints its
# instruction count.
run() {
  local port out pid
  port=$(free_port)
  out="$dir/cg.$port"
  (cd "$dir" && exec valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --port "$port" \
    --threads 1 --quiet >/dev/null 2>&1) &
  pid=$!
  for _ in $(seq 600); do
    redis-cli -p "$port" PING >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-cli -p "$port" RL.POLICY SET api TOKEN_BUCKET 100 1m >/dev/null
  if [ $# -gt 0 ]; then
    redis-benchmark -p "$port" -c 50 -P 16 -n "$n" -r 100000 -q "$@" >/dev/null
  fi
  kill -TERM "$pid"  # rl-server exits cleanly on SIGTERM; callgrind then writes its counts
  wait "$pid" || true
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
idle=$(run)
ping=$(run PING)
inline=$(run RL.CHECK "$key" TOKEN_BUCKET 100 1m)
policy=$(run RL.CHECK "$key" POLICY api)
python3 - "$n" "$idle" "$ping" "$inline" "$policy" <<'PY'
import sys
n, idle, ping, inline, policy = (int(x) for x in sys.argv[1:])
p, i, q = ((x - idle) / n for x in (ping, inline, policy))
print(f"instructions per request ({n} requests, -P 16, one I/O thread): PING {p:.0f}, "
      f"RL.CHECK inline TOKEN_BUCKET {i:.0f}, RL.CHECK POLICY api {q:.0f}")
print(f"inline check / PING = {i / p:.2f}   POLICY / inline check = {q / i:.3f}")
PY
