#!/bin/sh
# The compose file's one-shot `deploy` service (in the airlock image as
# /usr/local/bin/deploy-examples): waits for the API at $AIRLOCK_URL, then
# uploads the example handlers in /usr/share/airlock/examples and binds
# their queues, as `make run` does (without its mock gateway: payments are
# recorded nowhere, e-mails are simulated). Safe to run again: an upload of
# the same bytes and a binding to the same spec change nothing.
set -eu
examples=/usr/share/airlock/examples
tries=0
until airlock hosts >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -lt 120 ] || { echo "deploy: the API at $AIRLOCK_URL never answered" >&2; exit 1; }
  sleep 1
done
deploy() { airlock deploy "$examples/$2.wasm" --name "$1" >/dev/null && echo "deployed $1"; }
deploy payment-webhook payment_webhook
deploy email-delivery email_delivery
deploy order-workflow order_workflow
deploy noop noop
airlock queue bind payments --handler payment-webhook --attempts 5 --backoff exponential:2000 >/dev/null
airlock queue bind emails --handler email-delivery --attempts 3 --backoff fixed:1000 --events user.signed_up >/dev/null
airlock queue bind orders --handler order-workflow --attempts 3 --backoff exponential:1000 --events order.placed >/dev/null
airlock queue bind noop --handler noop --concurrency 50 >/dev/null
echo "bound queues: payments, emails, orders, noop"
