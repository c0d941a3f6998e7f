#!/usr/bin/env bash
# The Debian packages on a machine that has never seen the source: tools/package builds them from
# this build, a minimal Debian 12 root (mmdebstrap, cached in the build directory) gets them with
# apt, which resolves their dependencies from Debian, and inside it (chroot, no systemd):
#   - the unit is installed and enabled (its multi-user.target.wants symlink), the system user rl
#     and /var/lib/rl exist, /etc/rl/rl.toml is a conffile;
#   - rl-server started as the unit starts it (its ExecStart, as user rl, plus a free port)
#     answers RL.CHECK, and the unit's ExecReload lines re-read an edited policy table;
#   - redis-server with `loadmodule /usr/lib/rl/rl.so` answers RL.CHECK;
#   - a small C++ program builds against librl-dev with find_package(rl) and with pkg-config;
#   - an upgrade to rebuilt packages (a higher version) keeps the edited /etc/rl/rl.toml;
#   - apt purge leaves nothing of the packages but the system user rl (Debian keeps those).
# Skips (exit 77) only when not root or without mmdebstrap. Usage: deb_install_test.sh BUILD SRC
set -uo pipefail
build=$1 src=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (chroot, mount)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "SKIP: mmdebstrap not installed (tools/setup)"; exit 77; }
start=$(date +%s)
say() { echo "[$(($(date +%s) - start)) s] $*"; }
fail() {
  echo "FAIL ($(($(date +%s) - start)) s): $*"
  exit 1
}
cache=$build/deb-install-test
mkdir -p "$cache/archives/partial"
work=$(mktemp -d "$cache/run-XXXXXX")
root=$work/root
lintian_job="" next_job="" root_job=""
# in_root_pids [NAME]: the processes running in the root (named NAME).
in_root_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] || continue
    [ -z "${1:-}" ] || [ "$(cat "$p/comm" 2>/dev/null)" = "$1" ] || continue
    echo "${p#/proc/}"
  done
}
under_root_mounts() { findmnt -rn -o TARGET | grep -E "^$root(/|$)"; }
cleanup() {
  local p m
  for p in $lintian_job $next_job $root_job; do kill "$p" 2>/dev/null; done
  for p in $(in_root_pids); do kill -9 "$p" 2>/dev/null; done
  # Innermost first; lazily when a process still holds one. Nothing is deleted while anything
  # under the root is still mounted (that would reach the host's /dev).
  for m in $(under_root_mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  if [ -n "$(under_root_mounts)" ]; then
    echo "cleanup: $root still has mounts; left in place"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  DEBIAN_FRONTEND=noninteractive "$@"; }

# The root: Debian 12 with apt, plus what compiling the consumer program needs (not rl's
# dependencies: those come with the packages). Made once per build directory; each run writes
# to an overlay on it (a copy where overlayfs is missing), so the cached root stays fresh.
base=$cache/bookworm
root_job=""
if [ ! -d "$base" ]; then
  say "making $base with mmdebstrap (once per build directory), meanwhile the packages"
  # A fresh build directory starts with the .debs this machine's apt kept (hard links, so no
  # copy; none when on another file system): apt takes a cached file only when its hash is the
  # one the freshly fetched, signed index names, and downloads anything else, so the root is
  # still bookworm as Debian serves it, without fetching again what the host fetched already
  # (few of the root's own packages, most of what the packages below depend on).
  host_archives=/var/cache/apt/archives
  if [ -d "$host_archives" ] && [ -z "$(ls -A "$cache/archives" | grep '\.deb$')" ]; then
    find "$host_archives" -maxdepth 1 -name '*.deb' -exec ln -t "$cache/archives" {} + \
      2>/dev/null || true
  fi
  rm -rf "$base.tmp"
  # Mostly waiting on the network: in the background, while the packages are built. The apt
  # lists it fetched are kept (the root's apt-get update below then only revalidates them).
  # The root's apt cache is the one above (bind-mounted, unmounted before mmdebstrap's cleanup),
  # so the download is kept for the next run too.
  mmdebstrap --quiet --variant=apt --include=g++,cmake,make,pkg-config --skip=download/empty \
    --skip=essential/unlink --skip=cleanup/apt/lists \
    --setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
    --setup-hook="mount --bind '$cache/archives' \"\$1/var/cache/apt/archives\"" \
    --customize-hook='umount "$1/var/cache/apt/archives"' \
    bookworm "$base.tmp" http://deb.debian.org/debian >"$cache/mmdebstrap.log" 2>&1 &
  root_job=$!
fi
# The packages, from this build, and a rebuild one version up for the upgrade. lintian checks
# the first three meanwhile (an error fails the test at the end).
"$src/tools/package" --build "$build" --out "$work/debs" --no-build --no-lintian ||
  fail "tools/package"
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$work"/debs/*.deb >"$work/lintian.log" 2>&1 &
  lintian_job=$!
fi
version=$(dpkg-deb -f "$work"/debs/rl-server_*.deb Version)
# The upgrade's packages, made while the root is prepared.
"$src/tools/package" --build "$build" --out "$work/debs-next" --version "$version+1" --no-build \
  --no-lintian >"$work/package-next.log" 2>&1 &
next_job=$!
say "packages built"

if [ -n "$root_job" ]; then
  wait "$root_job" || fail "mmdebstrap: $(tail -5 "$cache/mmdebstrap.log")"
  root_job=""
  mv "$base.tmp" "$base"
  say "made $base"
fi
mkdir "$root" "$work/upper" "$work/overlay-work"
if ! mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/overlay-work" \
       "$root" 2>/dev/null; then
  cp -a "$base/." "$root/" || fail "copying $base"
fi
mount -t proc proc "$root/proc" || fail "mount /proc"
mount --bind /dev "$root/dev" || fail "mount /dev"
# Downloaded .debs are kept for the next run.
mount --bind "$cache/archives" "$root/var/cache/apt/archives" || fail "mount apt archives"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No fsync per file (the root is thrown away): Boost's headers unpack in seconds, not a minute.
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/unsafe-io"
# As in any chroot: maintainer scripts must not start services (redis-server's would take 6379).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mkdir "$root/tmp/debs" "$root/tmp/debs-next"
cp "$work"/debs/*.deb "$root/tmp/debs/"
apt_get() { in_root apt-get -q -y -o APT::Keep-Downloaded-Packages=true -o Acquire::Languages=none "$@"; }
# The .deb files as the root sees them (the glob is the host's).
debs=$(cd "$root" && echo tmp/debs/*.deb | sed 's|tmp/|/tmp/|g')
apt_get update >"$work/apt.log" 2>&1 || fail "apt-get update: $(tail -5 "$work/apt.log")"
say "root ready, apt lists updated"
apt_get install --no-install-recommends $debs >>"$work/apt.log" 2>&1 ||
  fail "apt-get install: $(tail -20 "$work/apt.log")"
say "installed: $(in_root dpkg-query -W rl-server rl-redis-module librl-dev | tr '\t\n' '  ')"

# --- rl-server as the package installs it
unit=/lib/systemd/system/rl-server.service
[ -f "$root$unit" ] || fail "no $unit"
wants=$root/etc/systemd/system/multi-user.target.wants/rl-server.service
[ "$(readlink "$wants")" = "$unit" ] || fail "unit not enabled: $wants -> $(readlink "$wants")"
in_root getent passwd rl >/dev/null || fail "no system user rl"
[ "$(in_root stat -c '%U:%G %a' /var/lib/rl)" = "rl:rl 700" ] ||
  fail "/var/lib/rl: $(in_root stat -c '%U:%G %a' /var/lib/rl)"
in_root dpkg-query -W -f='${Conffiles}' rl-server | grep -q '^ /etc/rl/rl.toml ' ||
  fail "/etc/rl/rl.toml is not a conffile"
for f in /usr/share/man/man1/rl-server.1.gz /usr/share/doc/rl-server/copyright \
         /usr/share/doc/rl-server/changelog.gz; do
  [ -f "$root$f" ] || fail "no $f"
done
grep -qx 'User=rl' "$root$unit" && grep -qx 'DynamicUser=no' "$root$unit" ||
  fail "the unit does not run as the system user rl"

# ExecStart as systemd would run it (as rl), with a free port instead of the config's 6380.
exec_start=$(sed -n 's/^ExecStart=//p' "$root$unit")
in_root setpriv --reuid rl --regid rl --init-groups $exec_start --port 0 --threads 1 \
  >"$work/server.out" 2>"$work/server.err" &
server_job=$!
port=""
for _ in $(seq 1 400); do
  port=$(sed -n 's/^rl-server ready: listening on .*:\([0-9]*\)$/\1/p' "$work/server.out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || fail "rl-server did not start with the packaged config: $(cat "$work/server.err")"
reply=$(in_root redis-cli -p "$port" RL.CHECK user:1 TOKEN_BUCKET 2 1m | head -n 1)
[ "$reply" = 1 ] || fail "rl-server's RL.CHECK replied '$reply'"
# `systemctl reload`: the unit's ExecReload lines with the server's pid, after an edit.
echo 'installtest = "FIXED_WINDOW 7 1m"' >>"$root/etc/rl/rl.toml"
server_pid=$(in_root_pids rl-server)
[ "$(stat -c %u "/proc/$server_pid")" = "$(in_root id -u rl)" ] ||
  fail "rl-server ($server_pid) does not run as user rl"
while read -r line; do
  in_root ${line//\$MAINPID/$server_pid} || fail "ExecReload $line failed"
done < <(sed -n 's/^ExecReload=//p' "$root$unit")
for _ in $(seq 1 200); do
  in_root redis-cli -p "$port" RL.POLICY LIST | grep -qx installtest && break
  sleep 0.05
done
in_root redis-cli -p "$port" RL.POLICY LIST | grep -qx installtest ||
  fail "ExecReload did not load the edited policies"
kill -TERM "$server_pid"
wait "$server_job" || fail "rl-server exited $? on SIGTERM: $(cat "$work/server.err")"
[ "$(in_root stat -c %U /var/lib/rl/state.rlsnap)" = rl ] || fail "no snapshot of user rl"
say "rl-server: RL.CHECK answered on port $port, ExecReload re-read the policies"

# --- redis-server with the packaged module, as the docs' redis.conf snippet loads it
redis_up=""
for _ in 1 2 3; do
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf 'port %s\nbind 127.0.0.1\nsave ""\nappendonly no\nloadmodule /usr/lib/rl/rl.so\n' \
    "$rport" >"$root/tmp/redis.conf"
  in_root redis-server /tmp/redis.conf >"$work/redis.log" 2>&1 &
  redis_job=$!
  for _ in $(seq 1 200); do
    in_root redis-cli -p "$rport" PING 2>/dev/null | grep -qx PONG && { redis_up=1; break; }
    kill -0 "$redis_job" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$redis_up" ] && break
done
[ -n "$redis_up" ] || fail "redis-server with rl.so did not start: $(tail -5 "$work/redis.log")"
reply=$(in_root redis-cli -p "$rport" RL.CHECK user:1 TOKEN_BUCKET 2 1m | head -n 1)
[ "$reply" = 1 ] || fail "redis-server's RL.CHECK replied '$reply'"
in_root redis-cli -p "$rport" SHUTDOWN NOSAVE >/dev/null 2>&1
wait "$redis_job"
say "redis-server $(in_root redis-server --version | grep -o 'v=[0-9.]*') with rl.so: RL.CHECK answered"

# --- librl-dev: the same program built with find_package(rl) and with pkg-config
mkdir -p "$root/tmp/app"
cat >"$root/tmp/app/app.cc" <<'EOF'
#include <rl/limiter.h>
#include <rl/remote_limiter.h>
#include <rl/version.h>
int main() { rl::Limiter limiter; auto create = &rl::RemoteLimiter::Create; return create && rl::Version() == RL_VERSION_STRING ? 0 : 1; }
EOF
cat >"$root/tmp/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(app CXX)
find_package(rl 0.3 REQUIRED)
add_executable(app app.cc)
target_compile_features(app PRIVATE cxx_std_20)
target_link_libraries(app PRIVATE rl::core rl::client)
EOF
# Both builds at once (one compiler each, two cores).
in_root sh -c 'g++ -std=c++20 -o /tmp/app/app-pc /tmp/app/app.cc $(pkg-config --cflags --libs rl rl-client)' \
  >"$work/app-pc.log" 2>&1 &
pc_job=$!
in_root sh -c 'cmake -S /tmp/app -B /tmp/app/build >/dev/null && cmake --build /tmp/app/build' \
  >"$work/app.log" 2>&1 || fail "find_package(rl) build: $(tail -20 "$work/app.log")"
in_root /tmp/app/build/app || fail "the find_package(rl) program failed"
wait "$pc_job" || fail "pkg-config build: $(tail -20 "$work/app-pc.log")"
in_root /tmp/app/app-pc || fail "the pkg-config program failed"
say "librl-dev: built and ran with find_package(rl) and with pkg-config rl rl-client"

# --- upgrade: the edited conffile stays
wait "$next_job" || fail "tools/package --version $version+1: $(cat "$work/package-next.log")"
cp "$work"/debs-next/*.deb "$root/tmp/debs-next/"
debs_next=$(cd "$root" && echo tmp/debs-next/*.deb | sed 's|tmp/|/tmp/|g')
edited=$(md5sum <"$root/etc/rl/rl.toml")
apt_get install --no-install-recommends $debs_next >>"$work/apt.log" 2>&1 ||
  fail "upgrade: $(tail -20 "$work/apt.log")"
[ "$(in_root dpkg-query -W -f='${Version}' rl-server)" = "$version+1" ] || fail "not upgraded"
[ "$(md5sum <"$root/etc/rl/rl.toml")" = "$edited" ] || fail "the upgrade replaced /etc/rl/rl.toml"
[ "$(readlink "$wants")" = "$unit" ] || fail "the upgrade lost the unit's enablement"
say "upgrade to $version+1 kept the edited /etc/rl/rl.toml"

# --- purge: nothing left of the three packages but the system user rl
files=$(in_root dpkg-query -L rl-server rl-redis-module librl-dev | sort -u)
apt_get purge rl-server rl-redis-module librl-dev >>"$work/apt.log" 2>&1 ||
  fail "purge: $(tail -20 "$work/apt.log")"
left=""
while read -r f; do
  # Directories the packages share with others (/usr, /etc, /lib/systemd/system) stay.
  [ -e "$root$f" ] || continue
  # A directory still in use, or owned by another package (dpkg keeps it even when empty).
  if [ -d "$root$f" ] && { [ -n "$(ls -A "$root$f")" ] || in_root dpkg-query -S "$f" >/dev/null 2>&1; }; then
    continue
  fi
  left+=" $f"
done <<<"$files"
for f in /etc/rl /var/lib/rl /usr/lib/rl /etc/systemd/system/multi-user.target.wants/rl-server.service \
         /var/lib/systemd/deb-systemd-helper-enabled/rl-server.service.dsh-also \
         /var/lib/systemd/deb-systemd-helper-masked/rl-server.service; do
  [ -e "$root$f" ] || [ -L "$root$f" ] && left+=" $f"
done
[ -z "$left" ] || fail "purge left:$left"
in_root getent passwd rl >/dev/null || fail "purge removed the system user rl (Debian keeps it)"
say "purge: nothing left but the system user rl"
if [ -n "$lintian_job" ]; then
  wait "$lintian_job"
  grep -v 'running with root privileges' "$work/lintian.log"
  ! grep -q '^E: ' "$work/lintian.log" || fail "lintian reports errors"
fi
echo "ok ($(($(date +%s) - start)) s)"
