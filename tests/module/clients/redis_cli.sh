#!/usr/bin/env bash
# redis-cli against redis-server with rl.so (port in $1; $2: the cli, valkey-cli against Valkey):
# RESP2, -3 (RESP3), piped inline commands, the module's INFO section and key type, and the
# interactive start-up, whose hints and `help` come from COMMAND DOCS (rl.so registers its docs
# from the shared rows).
set -euo pipefail
port=$1
redis_cli=${2:-redis-cli}
command -v "$redis_cli" >/dev/null || { echo "$redis_cli not installed"; exit 77; }
cli=("$redis_cli" -p "$port")
fail() { echo "FAIL: $*"; exit 1; }

[ "$("${cli[@]}" PING)" = "PONG" ] || fail "PING"
out=$("${cli[@]}" RL.CHECK cli:k TOKEN_BUCKET 5 1m | tr '\n' ' ')
[ "$out" = "1 5 4 0 12000 " ] || fail "RL.CHECK RESP2: $out"
out=$("${cli[@]}" -3 RL.CHECK cli:k TOKEN_BUCKET 5 1m | tr '\n' ' ')
case "$out" in
  "allowed 1 limit 5 remaining 3 retry_after_ms 0 reset_after_ms "*) ;;
  *) fail "RL.CHECK RESP3: $out" ;;
esac
out=$("${cli[@]}" -3 RL.CHECK cli:h FIXED_WINDOW 1 1m HEADERS)
echo "$out" | grep -q '^headers X-RateLimit-Limit 1$' || fail "RESP3 headers: $out"
out=$("${cli[@]}" CL.THROTTLE cli:user123 15 30 60 | tr '\n' ' ')
[ "$out" = "0 16 15 -1 2 " ] || fail "CL.THROTTLE: $out"
out=$("${cli[@]}" RL.CHECK cli:k GCRA 5 1s COST -1 2>&1)
[ "$out" = "ERR COST must not be negative" ] || fail "error: $out"
[ "$("${cli[@]}" TYPE cli:k)" = "ratelimit" ] || fail "TYPE"
"${cli[@]}" SET cli:string x >/dev/null
out=$("${cli[@]}" RL.CHECK cli:string GCRA 5 1s 2>&1)
[ "$out" = "WRONGTYPE Operation against a key holding the wrong kind of value" ] || fail "$out"

# Piped inline commands (redis-cli sends them pipelined from stdin).
out=$(printf 'PING\nRL.CHECK cli:pipe FIXED_WINDOW 2 1m\nRL.CHECK cli:pipe FIXED_WINDOW 2 1m\nRL.CHECK cli:pipe FIXED_WINDOW 2 1m\nDBSIZE\n' \
  | "${cli[@]}" | tr '\n' ' ')
case "$out" in
  "PONG 1 2 1 0 "*"1 2 0 0 "*"0 2 0 "*) ;;
  *) fail "piped: $out" ;;
esac
printf 'RL.POLICY SET cli-policy GCRA 10 1s\nRL.POLICY GET cli-policy\n' | "${cli[@]}" \
  | tr '\n' ' ' | grep -q "OK GCRA 10 1s" || fail "policy via pipe"
"${cli[@]}" INFO rl | grep -q '^rl_checks:' || fail "INFO rl"
"${cli[@]}" MODULE LIST | grep -q '^rl$' || fail "MODULE LIST"

# Interactive mode (TERM=dumb keeps linenoise from querying the cursor position, which a
# scripted pseudo-terminal never answers).
if command -v script >/dev/null; then
  out=$(printf 'RL.CHECK cli:tty GCRA 5 1s\nhelp RL.CHECK\nquit\n' \
    | TERM=dumb timeout 10 script -qec "$redis_cli -p $port" /dev/null 2>&1) \
    || fail "interactive redis-cli: $out"
  echo "$out" | grep -q "(integer) 5" || fail "interactive output: $out"
  echo "$out" | grep -q "Checks and consumes" || fail "help RL.CHECK from COMMAND DOCS: $out"
fi
echo "redis-cli ok"
