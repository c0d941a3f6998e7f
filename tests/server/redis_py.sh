#!/usr/bin/env bash
# redis-py (Debian's python3-redis, for /usr/bin/python3): RESP2 client, pipelines, parallel
# clients, and a RESP3 connection (HELLO 3) over a raw socket as redis-py 5+ speaks by default.
set -euo pipefail
/usr/bin/python3 -c "import redis" 2>/dev/null || { echo "python3-redis not installed"; exit 77; }
exec /usr/bin/python3 "$(dirname "$0")/redis_py_client.py"
