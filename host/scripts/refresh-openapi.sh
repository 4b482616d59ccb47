#!/usr/bin/env bash
# Refreshes host/ui/openapi.json from the document the host serves, then
# the dashboard's generated types (host/ui/src/api-types.ts). Run after any
# change to the API; tests/tests/api.rs fails while the file is stale.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build -p airlock
port=${REFRESH_REDIS_PORT:-6399}
listen=127.0.0.1:${REFRESH_API_PORT:-18080}
redis-server --port "$port" --save '' --appendonly no --daemonize yes >/dev/null
trap 'kill "$host" 2>/dev/null; redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
target/debug/airlock serve --redis "redis://127.0.0.1:$port" --listen "$listen" --no-workers >/dev/null 2>&1 &
host=$!
for _ in $(seq 100); do curl -sf "http://$listen/openapi.json" >/dev/null && break; sleep 0.2; done
curl -sf "http://$listen/openapi.json" | python3 -m json.tool --indent 2 > host/ui/openapi.json
cd host/ui && npm run --silent types && npm run --silent check
echo "host/ui/openapi.json and src/api-types.ts refreshed"
