#!/usr/bin/env bash
# Builds the images of a fleet here, pulling from no registry:
#   localhost/airlock:<version> (and :latest) — the release `airlock` binary
#     ($AIRLOCK_BINARY instead, when set: CI's debug build)
#     (its dashboard is inside it) with its libraries, the CA bundle, busybox
#     for the health check and the deploy script, the example handlers in
#     /usr/share/airlock/examples, running as user 10001;
#   localhost/airlock-redis:<version> (and :latest) — Debian's redis-server,
#     as user 10002, its data in /data.
# Each is a root file system made by rootfs.py from this machine's files,
# imported with `podman import`; the airlock one gets its user, entry point
# and health check from Containerfile (`podman build --pull=never`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/host/deploy"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
release="${AIRLOCK_BINARY:-$root/target/release/airlock}"
examples="$root/target/wasm32-wasip2/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for need in "$release" "$examples/payment_webhook.wasm" /bin/busybox \
  /etc/ssl/certs/ca-certificates.crt "$(command -v redis-server)"; do
  [ -e "$need" ] || { echo "image.sh: missing $need (make image builds it)" >&2; exit 1; }
done

example_files=()
for wasm in payment_webhook email_delivery order_workflow noop; do
  [ -e "$examples/$wasm.wasm" ] && example_files+=(--file "$examples/$wasm.wasm=/usr/share/airlock/examples/$wasm.wasm")
done
busybox_links=()
for tool in sh wget sleep echo cat; do
  busybox_links+=(--link "/bin/$tool=busybox")
done

python3 "$here/rootfs.py" "$work/airlock.tar" --user airlock:10001 \
  --exe "$release=/usr/local/bin/airlock" \
  --exe /bin/busybox=/bin/busybox "${busybox_links[@]}" \
  --file /etc/ssl/certs/ca-certificates.crt \
  --file "$here/deploy-examples.sh=/usr/local/bin/deploy-examples" \
  "${example_files[@]}" \
  --dir /var/lib/airlock=10001:750 --dir /var/lib/airlock/cache=10001:750
podman import -q "$work/airlock.tar" "localhost/airlock-rootfs:$version" >/dev/null
podman build -q --pull=never --format docker \
  --build-arg "ROOTFS=localhost/airlock-rootfs:$version" \
  -t "localhost/airlock:$version" -t localhost/airlock:latest \
  -f "$here/Containerfile" "$here" >/dev/null

python3 "$here/rootfs.py" "$work/redis.tar" --user redis:10002 \
  --exe "$(command -v redis-server)=/usr/local/bin/redis-server" \
  --dir /data=10002:750
podman import -q \
  --change 'USER 10002:10002' --change 'WORKDIR /data' --change 'EXPOSE 6379' \
  --change 'ENTRYPOINT ["/usr/local/bin/redis-server"]' \
  --change 'CMD ["--appendonly", "yes", "--protected-mode", "no"]' \
  "$work/redis.tar" "localhost/airlock-redis:$version" >/dev/null
podman tag "localhost/airlock-redis:$version" localhost/airlock-redis:latest

podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^localhost/airlock(-redis)?:' | sort
