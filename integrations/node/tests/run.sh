#!/usr/bin/env bash
# Runs the Node adapter's tests (node:test) against RL_HOST / RL_PORT; with_servers.sh calls it
# once per server. No node: skipped (77); no node_modules: a setup failure (tools/setup).
set -uo pipefail
dir=$(cd "$(dirname "$0")/.." && pwd)
command -v node >/dev/null || { echo "node not installed"; exit 77; }
[ -d "$dir/node_modules/express-rate-limit" ] ||
  { echo "FAIL: no $dir/node_modules: run tools/setup"; exit 1; }
cd "$dir" && node --test --test-reporter=spec tests/
