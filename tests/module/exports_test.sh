#!/usr/bin/env bash
# rl.so exports RedisModule_OnLoad and nothing else of its own (rl's and its static libraries'
# symbols stay hidden, so they cannot clash with the server or other modules). Instantiations
# of the standard library's templates (namespace std, mangled _ZNSt / _ZSt / _ZZNSt) keep the
# default visibility libstdc++'s headers give them; they are the same in every user.
set -euo pipefail
command -v nm >/dev/null || { echo "nm not installed"; exit 77; }
exported=$(nm -D --defined-only "$1" | awk '{print $3}' | grep -Ev '^_Z(N|ZN)?St' | sort)
[ "$exported" = "RedisModule_OnLoad" ] || { echo "rl.so exports more than RedisModule_OnLoad:"; echo "$exported" | head -20; exit 1; }
echo "rl.so exports only RedisModule_OnLoad"
