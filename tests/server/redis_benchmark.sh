#!/usr/bin/env bash
# redis-benchmark with RL.CHECK (any error reply makes it exit non-zero), PING, and pipelining.
set -euo pipefail
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not installed"; exit 77; }
rb=(redis-benchmark -p "$RL_PORT" -q)
"${rb[@]}" -t ping -n 20000 -c 20
"${rb[@]}" -n 20000 -c 20 -P 16 -r 1000 RL.CHECK key:__rand_int__ TOKEN_BUCKET 100 1s
"${rb[@]}" -n 20000 -c 20 RL.CHECK bench:hot GCRA 1000000 1s COST 1 HEADERS
"${rb[@]}" -3 -n 5000 -c 5 RL.CHECK bench:resp3 SLIDING_WINDOW 10 1s
"${rb[@]}" -n 5000 -c 5 CL.THROTTLE bench:cell 15 30 60
echo "redis-benchmark ok"
