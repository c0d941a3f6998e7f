#!/usr/bin/env bash
# `cmake --install` puts rl.so in <prefix>/<libdir>/rl/rl.so, and Redis loads it from there with
# a POLICIES file. Usage: install_test.sh <cmake> <build dir> <libdir> <policies file>
set -euo pipefail
cmake=$1 build=$2 libdir=$3 policies=$4
command -v redis-server >/dev/null && command -v redis-cli >/dev/null \
  || { echo "redis-server/redis-cli not installed"; exit 77; }
work=$(mktemp -d /tmp/rl-install-test-XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log"
so="$work/prefix/$libdir/rl/rl.so"
[ -f "$so" ] || { echo "no $so after cmake --install:"; cat "$work/install.log"; exit 1; }
grep -q "Installing: .*/$libdir/rl/rl.so" "$work/install.log"

# A unix socket, so no TCP port is needed.
redis-server --port 0 --unixsocket "$work/redis.sock" --save "" --dir "$work" \
  --logfile "$work/redis.log" --loadmodule "$so" POLICIES "$policies" &
pid=$!
for _ in $(seq 1 400); do  # up to 20 s: a busy machine starts it slowly
  [ "$(redis-cli -s "$work/redis.sock" PING 2>/dev/null)" = "PONG" ] && break
  sleep 0.05
done
out=$(redis-cli -s "$work/redis.sock" RL.CHECK rl:install POLICY api 2>&1 | tr '\n' ' ') || true
case "$out" in
  "1 100 99 0 "*) ;;
  *) echo "RL.CHECK from the installed rl.so: $out"; cat "$work/redis.log"; exit 1 ;;
esac
redis-cli -s "$work/redis.sock" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
wait "$pid" || true
pid=""
echo "installed $libdir/rl/rl.so loads and answers"
