#!/usr/bin/env bash
# redis-cli against rl-server: plain RESP2, -3 (RESP3), piped inline commands, and the
# interactive start-up (COMMAND DOCS parsed for hints) through a pseudo-terminal.
set -euo pipefail
command -v redis-cli >/dev/null || { echo "redis-cli not installed"; exit 77; }
cli=(redis-cli -p "$RL_PORT")
fail() { echo "FAIL: $*"; exit 1; }

[ "$("${cli[@]}" PING)" = "PONG" ] || fail "PING"
out=$("${cli[@]}" RL.CHECK cli:k TOKEN_BUCKET 5 1m | tr '\n' ' ')
[ "$out" = "1 5 4 0 12000 " ] || fail "RL.CHECK RESP2: $out"
out=$("${cli[@]}" -3 RL.CHECK cli:k TOKEN_BUCKET 5 1m | tr '\n' ' ')
case "$out" in
  "allowed 1 limit 5 remaining 3 retry_after_ms 0 reset_after_ms "*) ;;
  *) fail "RL.CHECK RESP3: $out" ;;
esac
out=$("${cli[@]}" CL.THROTTLE cli:user123 15 30 60 | tr '\n' ' ')
[ "$out" = "0 16 15 -1 2 " ] || fail "CL.THROTTLE: $out"
out=$("${cli[@]}" FOO bar 2>&1)
[ "$out" = "ERR unknown command 'FOO', with args beginning with: 'bar' " ] || fail "unknown: $out"

# Piped inline commands (redis-cli sends them pipelined from stdin).
out=$(printf 'PING\nRL.CHECK cli:pipe FIXED_WINDOW 2 1m\nRL.CHECK cli:pipe FIXED_WINDOW 2 1m\nRL.CHECK cli:pipe FIXED_WINDOW 2 1m\nDBSIZE\n' \
  | "${cli[@]}" | tr '\n' ' ')
case "$out" in
  "PONG 1 2 1 0 "*"1 2 0 0 "*"0 2 0 "*) ;;
  *) fail "piped: $out" ;;
esac
printf 'RL.POLICY SET cli-policy GCRA 10 1s\nRL.POLICY GET cli-policy\n' | "${cli[@]}" \
  | tr '\n' ' ' | grep -q "OK GCRA 10 1s" || fail "policy via pipe"
"${cli[@]}" INFO stats | grep -q '^rl_checks:' || fail "INFO stats"
"${cli[@]}" INFO keyspace | grep -q '^db0:keys=' || fail "INFO keyspace"

# Interactive mode asks COMMAND DOCS at start-up and asserts on its shape (a malformed reply
# aborts it); `help RL.CHECK` prints the summary built from our docs. TERM=dumb keeps linenoise
# from querying the cursor position, which a scripted pseudo-terminal never answers.
if command -v script >/dev/null; then
  out=$(printf 'RL.CHECK cli:tty GCRA 5 1s\nhelp RL.CHECK\nquit\n' \
    | TERM=dumb timeout 10 script -qec "redis-cli -p $RL_PORT" /dev/null 2>&1) \
    || fail "interactive redis-cli: $out"
  echo "$out" | grep -q "(integer) 5" || fail "interactive output: $out"
  echo "$out" | grep -q "Checks and consumes" || fail "help RL.CHECK from COMMAND DOCS: $out"
fi
echo "redis-cli ok"
