#!/usr/bin/env bash
# `make image-test`: the fleet of compose.yaml, from the images image.sh
# built, completes the payment example. Checks that the image runs as its
# own user with a passing health check, that both hosts join the fleet, and
# that payments enqueued through host-a's published API complete. A machine
# that cannot run containers at all says so and skips (exit 0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
project=airlock-smoke-$$
export AIRLOCK_ADMIN_TOKEN=smoke-admin-$RANDOM$RANDOM AIRLOCK_PRODUCER_TOKEN=smoke-producer-$RANDOM$RANDOM
compose() { podman-compose -p "$project" -f "$here/compose.yaml" "$@" >/dev/null 2>&1; }
fail() { echo "image-test: $*" >&2; podman ps -a --filter "label=io.podman.compose.project=$project" --format '{{.Names}} {{.Status}}' >&2; for c in $(podman ps -a -q --filter "label=io.podman.compose.project=$project"); do podman logs --tail 20 "$c" >&2 2>&1 || true; done; exit 1; }
trap 'compose down -v || true' EXIT

if ! podman run --rm localhost/airlock:latest --version >/dev/null 2>&1; then
  echo "image-test: skipped: this machine cannot run containers (podman run failed)"
  exit 0
fi
user=$(podman image inspect localhost/airlock:latest --format '{{.Config.User}}')
[ "$user" = "10001:10001" ] || fail "the image runs as '$user', not 10001:10001"

compose up -d || fail "podman-compose up failed"
deploy="${project}_deploy_1"
for _ in $(seq 120); do
  state=$(podman inspect "$deploy" --format '{{.State.Status}} {{.State.ExitCode}}' 2>/dev/null || true)
  [ "$state" = "exited 0" ] && break
  case "$state" in exited*) fail "the deploy ended: $state";; esac
  sleep 1
done
[ "$state" = "exited 0" ] || fail "the deploy never finished ($state)"
podman healthcheck run "${project}_host-a_1" >/dev/null || fail "host-a's health check failed"

api() { podman exec -e AIRLOCK_URL=http://127.0.0.1:8080 -e AIRLOCK_TOKEN="$1" "${project}_host-a_1" airlock "${@:2}"; }
for _ in $(seq 60); do
  [ "$(api "$AIRLOCK_ADMIN_TOKEN" hosts --json 2>/dev/null | grep -o '"id"' | wc -l)" -ge 2 ] && break
  sleep 1
done
hosts=$(api "$AIRLOCK_ADMIN_TOKEN" hosts --json | grep -o '"id": *"host-[ab]"' | sort -u | wc -l)
[ "$hosts" -eq 2 ] || fail "not both hosts joined the fleet"
for i in 1 2 3 4; do
  out=$(api "$AIRLOCK_PRODUCER_TOKEN" enqueue payments "{\"transactionId\":\"tx_smoke_$i\",\"amount\":$i}" --wait) \
    || fail "payment $i did not complete: $out"
  echo "$out" | grep -q "\"ledgerRecordId\": \"led_tx_smoke_$i\"" || fail "payment $i answered: $out"
done
echo "image-test: a two-host fleet from localhost/airlock completed 4 payments"
