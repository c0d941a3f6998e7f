#!/usr/bin/env bash
# What `cmake --install` gives an operator, checked in a temporary prefix: the binary, the config
# in etc/rl, the systemd unit (paths of this install, a snapshot under /var/lib/rl, hardening;
# `systemd-analyze verify` and its security score when systemd is there, a syntax check when
# not), the man page, the LICENSE, and that the installed binary starts with the installed
# config and logs lines that carry timestamps.
# Usage: install_test.sh <build dir>
set -uo pipefail
build=$1
prefix=$(mktemp -d /tmp/rl-dist-test-XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$prefix"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

cmake --install "$build" --prefix "$prefix" >/dev/null || fail "cmake --install"
for f in bin/rl-server etc/rl/rl.toml lib/systemd/system/rl-server.service share/doc/rl/LICENSE \
         lib/pkgconfig/rl.pc lib/cmake/rl/rlConfig.cmake include/rl/rate_limiter.h; do
  [ -f "$prefix/$f" ] || fail "install did not create $f"
done
grep -q "MIT License" "$prefix/share/doc/rl/LICENSE" || fail "LICENSE is not the MIT license"

# The man page, generated at build time when help2man is there (tools/setup installs it).
man_page="$prefix/share/man/man1/rl-server.1"
if command -v help2man >/dev/null; then
  [ -f "$man_page" ] || fail "no man page although help2man is installed"
  rendered=$(MANWIDTH=100 man -l "$man_page" 2>/dev/null || groff -man -Tascii "$man_page")
  for word in "--snapshot" "--config" "SIGHUP" "/var/lib/rl/state.rlsnap"; do
    grep -q -- "$word" <<<"$rendered" || fail "man page lacks $word"
  done
  # --help's "Options:" is a section of its own, not the last word of the description.
  grep -qx "OPTIONS" <<<"$rendered" || fail "man page has no OPTIONS section"
  grep -q "Options:" <<<"$rendered" && fail "man page runs 'Options:' into a paragraph"
  # Every exit code rl-server uses, 2 (a command line it cannot parse) included.
  codes=$(sed -n '/^EXIT STATUS/,/^[A-Z]/p' <<<"$rendered")
  for code in 0 1 2; do
    grep -qE "^ +$code\b" <<<"$codes" || fail "man page's EXIT STATUS lacks $code: $codes"
  done
else
  echo "help2man not installed: man page not checked"
fi

unit="$prefix/lib/systemd/system/rl-server.service"
want="ExecStart=$prefix/bin/rl-server --config $prefix/etc/rl/rl.toml --snapshot /var/lib/rl/state.rlsnap"
grep -qxF "$want" "$unit" || fail "unit's ExecStart is not '$want': $(grep ExecStart= "$unit")"
for line in StateDirectory=rl DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict \
            ProtectHome=yes PrivateTmp=yes PrivateDevices=yes CapabilityBoundingSet=; do
  grep -qxF "$line" "$unit" || fail "unit lacks $line"
done
if command -v systemd-analyze >/dev/null; then
  # verify prints warnings (unknown keys, a missing binary or man page) without failing on all
  # of them, so any output counts as a failure. No MANPATH: the unit must name its man page so
  # that it is found from this prefix as it is (an operator's shell sets none either).
  out=$(cd "$prefix" && env -u MANPATH systemd-analyze verify "$unit" 2>&1) ||
    fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warned: $out"
  # Exposure 0 (locked down) .. 10 (unprotected); systemd calls <= 2 "OK". --threshold counts in
  # tenths (its default, 100, is 10.0).
  score=$(systemd-analyze security --offline=yes --threshold=20 "$unit" 2>&1) ||
    fail "systemd-analyze security above 2: $(tail -1 <<<"$score")"
  echo "$(grep -o 'Overall exposure level.*' <<<"$score")"
else
  # No systemd: every line is blank, a comment, a [Section] or Key=Value.
  bad=$(grep -nvE '^(#.*|\[(Unit|Service|Install)\]|[A-Za-z]+=.*|)$' "$unit")
  [ -z "$bad" ] || fail "unit lines that are not Key=Value: $bad"
  echo "systemd-analyze not installed: syntax checked only"
fi

# The installed binary with the installed config (its policies load), on a free port and a
# snapshot in the temporary prefix rather than /var/lib/rl.
out="$prefix/stdout" err="$prefix/stderr"
"$prefix/bin/rl-server" --config "$prefix/etc/rl/rl.toml" --port 0 --threads 1 \
  --snapshot "$prefix/state.rlsnap" >"$out" 2>"$err" &
pid=$!
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's/^rl-server ready: listening on .*:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || fail "installed rl-server did not start with the installed config: $(cat "$err")"
policies=$(redis-cli -p "$port" RL.POLICY LIST | wc -l)
[ "$policies" -gt 0 ] || fail "the installed config defined no policies"
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "rl-server exited $rc after SIGTERM: $(cat "$err")"
[ -f "$prefix/state.rlsnap" ] || fail "no snapshot written at SIGTERM"
# Every log line starts with an ISO 8601 UTC timestamp to the millisecond.
[ "$(wc -l <"$err")" -ge 3 ] || fail "expected several log lines, got: $(cat "$err")"
stamp='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z rl-server: '
unstamped=$(grep -vE "$stamp" "$err")
[ -z "$unstamped" ] || fail "log lines without a timestamp: $unstamped"
head -n 2 "$err"
echo "ok"
