#!/usr/bin/env bash
# `make run`: a local Airlock platform with the example handlers deployed.
#
# - Redis on 127.0.0.1:${AIRLOCK_REDIS_PORT:-6379} (installed with apt-get when
#   missing), data and AOF under .airlock/redis/ in the project;
# - one Airlock host with the HTTP API on ${AIRLOCK_LISTEN:-127.0.0.1:8080};
# - a mock mail gateway, ledger and approval service
#   (host/scripts/mock-gateway.js) on ${MOCK_GATEWAY_LISTEN:-127.0.0.1:8090},
#   which the e-mail, payment and refund examples call through their
#   bindings' config, egress and secret; it also serves the example shop
#   (/app/), whose page pays and follows the payment live with a read token
#   (the API allows the gateway's origin: --cors-origin);
# - the example handlers deployed and their queues bound;
# - an admin token kept in .airlock/token, the shop's producer token in
#   .airlock/shop.token, the secrets key in .airlock/secrets.key, the fleet
#   key (managed tokens, read tokens, the audit log's seals) in
#   .airlock/fleet.key and the gateway's API key in .airlock/gateway.key
#   (created on first run).
# Ctrl-C stops the host and the Redis it started.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
state="$root/.airlock"
mkdir -p "$state/redis"
target="${CARGO_TARGET_DIR:-$root/target}"
airlock="$target/debug/airlock"
guests="$target/wasm32-wasip2/release"
port="${AIRLOCK_REDIS_PORT:-6379}"
listen="${AIRLOCK_LISTEN:-127.0.0.1:8080}"
url="http://$listen"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v redis-server >/dev/null; then
  echo "installing redis-server"
  as_root apt-get update -qq && as_root apt-get install -y -qq redis-server
fi

if [ ! -s "$state/token" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/token"
fi
token=$(cat "$state/token")
if [ ! -s "$state/shop.token" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/shop.token"
fi
shop_token=$(cat "$state/shop.token")
random_hex() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
[ -s "$state/secrets.key" ] || random_hex > "$state/secrets.key"
[ -s "$state/gateway.key" ] || random_hex > "$state/gateway.key"
[ -s "$state/fleet.key" ] || random_hex > "$state/fleet.key"
chmod 600 "$state/secrets.key" "$state/gateway.key" "$state/fleet.key" "$state/token" "$state/shop.token"
gateway_listen="${MOCK_GATEWAY_LISTEN:-127.0.0.1:8090}"
gateway="http://$gateway_listen"

started_redis=""
if redis-cli -p "$port" ping >/dev/null 2>&1; then
  echo "using the Redis already running on port $port"
else
  redis-server --port "$port" --bind 127.0.0.1 --dir "$state/redis" \
    --appendonly yes --appendfsync everysec --save '' \
    --maxmemory-policy noeviction --daemonize yes \
    --pidfile "$state/redis/redis.pid" --logfile "$state/redis/redis.log"
  started_redis=yes
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

cleanup() {
  [ -n "${gateway_pid:-}" ] && kill "$gateway_pid" 2>/dev/null
  [ -n "${host_pid:-}" ] && kill "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null
  if [ -n "$started_redis" ]; then redis-cli -p "$port" shutdown >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
trap 'exit 0' INT TERM

if command -v node >/dev/null; then
  MOCK_GATEWAY_LISTEN="$gateway_listen" MOCK_GATEWAY_KEY="$(cat "$state/gateway.key")" \
    AIRLOCK_URL="$url" AIRLOCK_APP_TOKEN="$shop_token" \
    node "$root/host/scripts/mock-gateway.js" > "$state/gateway.log" 2>&1 &
  gateway_pid=$!
else
  echo "node not found: the mock gateway is not started; e-mails and payments are simulated, refunds fail (no approval service)"
  gateway=""
fi

# What handlers may reach (the host operator's list; each binding's egress
# list narrows it): the mock gateway, plus the destinations in
# AIRLOCK_EGRESS_ALLOW (comma-separated patterns, as --egress-allow takes:
# AIRLOCK_EGRESS_ALLOW='https://api.stripe.com,https://*.sendgrid.net' make run).
allow="$gateway"
if [ -n "${AIRLOCK_EGRESS_ALLOW:-}" ]; then allow="${allow:+$allow,}$AIRLOCK_EGRESS_ALLOW"; fi

"$airlock" serve --redis "redis://127.0.0.1:$port" --listen "$listen" \
  --tokens "admin:local:$token,producer:shop:$shop_token" --host-id local \
  --secrets-key-file "$state/secrets.key" --artifact-key-file "$state/fleet.key" \
  ${gateway:+--cors-origin "$gateway"} \
  ${allow:+--egress-allow "$allow"} ${gateway:+--egress-allow-network 127.0.0.1/32} &
host_pid=$!
for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

export AIRLOCK_URL="$url" AIRLOCK_TOKEN="$token"
deploy() { "$airlock" deploy "$guests/$2.wasm" --name "$1" >/dev/null && echo "deployed $1"; }
deploy payment-webhook payment_webhook
deploy email-delivery email_delivery
deploy order-workflow order_workflow
deploy noop noop
deploy data-extraction data_extraction
deploy report-aggregator report_aggregator
deploy catalog-sync catalog_sync
deploy refund-request refund_request
"$airlock" queue bind payments --handler payment-webhook --attempts 5 --backoff exponential:2000 \
  ${gateway:+--config "LEDGER_URL=$gateway" --egress "$gateway"} >/dev/null
"$airlock" queue bind emails --handler email-delivery --attempts 3 --backoff fixed:1000 --events user.signed_up \
  ${gateway:+--config "GATEWAY_URL=$gateway" --egress "$gateway"} >/dev/null
if [ -n "$gateway" ]; then
  "$airlock" secret set emails MAIL_API_KEY --allow "$gateway" < "$state/gateway.key" >/dev/null
  echo "mock gateway on $gateway (log: .airlock/gateway.log); emails send through it with secret MAIL_API_KEY"
fi
"$airlock" queue bind orders --handler order-workflow --attempts 3 --backoff exponential:1000 --events order.placed >/dev/null
"$airlock" queue bind data-extraction --handler data-extraction --attempts 3 --backoff exponential:1000 >/dev/null
"$airlock" queue bind report-aggregator --handler report-aggregator >/dev/null
"$airlock" queue bind catalog --handler catalog-sync >/dev/null
"$airlock" queue bind noop --handler noop --concurrency 50 >/dev/null
"$airlock" queue bind refunds --handler refund-request \
  ${gateway:+--config "APPROVAL_URL=$gateway" --egress "$gateway"} >/dev/null
"$airlock" schedule set catalog nightly-catalog-sync --cron '0 3 * * *' --data '{"catalog":"main","items":500}' >/dev/null
echo "bound queues: payments, emails, orders, data-extraction, report-aggregator, catalog, noop, refunds"
echo "schedule: nightly-catalog-sync (0 3 * * *) on catalog"

shop=${gateway:+$gateway/app/}
cat <<MSG

Airlock is running.
  API     $url   (OpenAPI document: $url/openapi.json)
  UI      $url/ui/   (the dashboard: log in with the token below)
  token   $token   (admin; kept in .airlock/token)
  Redis   redis://127.0.0.1:$port   (AOF under .airlock/redis)
  Shop    ${shop:-(not started: it needs node)}   (an example web app: pay, and watch the payment live with a read token)

Try it:
  curl -s --retry 5 -X POST $url/v1/queues/payments/jobs \\
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \\
    -H 'Idempotency-Key: tx_1' \\
    -d '{"name":"payment","data":{"transactionId":"tx_1","amount":42.5}}'

  export AIRLOCK_URL=$url AIRLOCK_TOKEN=$token
  $airlock enqueue payments '{"transactionId":"tx_2","amount":10}' --wait
  $airlock enqueue orders '{"orderId":"o-1","amount":99,"reviewDelayMs":5000}' --wait
  $airlock emit user.signed_up '{"to":"ada@example.com","subject":"Welcome"}' --id signup-ada
  $airlock schedule trigger catalog nightly-catalog-sync
  $airlock enqueue refunds '{"refundId":"r-1","orderId":"o-1","amount":25}'   # then approve it:
  curl -s ${gateway:-<approval service>}/v1/approvals    # the manager's inbox: the approval token, for
  curl -s -X POST $url/v1/tokens/<token>/complete -H 'Content-Type: application/json' -d '{"approved":true,"by":"me"}'
  $airlock emit refund.settled '{"refundId":"r-1"}'
  curl -s -X POST $url/v1/flows -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"name":"aggregate-final-report","queue":"report-aggregator","data":{"reportId":"r1"},
         "children":[{"name":"data-extraction","queue":"data-extraction","data":{"source":"eu","records":10},"opts":{"attempts":3}},
                     {"name":"data-extraction","queue":"data-extraction","data":{"source":"us","records":5},"opts":{"attempts":3}}]}'

Ctrl-C to stop.
MSG
wait "$host_pid"
