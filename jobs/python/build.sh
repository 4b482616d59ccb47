#!/usr/bin/env bash
# Builds every Python example under jobs/python/ into OUTDIR/py_<name>.wasm
# (dashes become underscores: payment-webhook -> py_payment_webhook.wasm).
# A folder holding a file named BATCH (its app is a @batch_handler) is built
# with --batch, for the SDK's batch-handler world (exports run and run-batch);
# the others for the handler world (run).
#
#   jobs/python/build.sh OUTDIR
#
# The build tool, componentize-py, is pinned in guest-sdk/python/requirements.txt
# and installed into a virtualenv under ${CARGO_TARGET_DIR:-target}/py-guest-venv
# (created once; re-installed when the pins change). A component whose inputs
# (its folder, the SDK, the WIT, the tool version) did not change since the
# last build is not rebuilt: a hash stamp sits next to it (OUTDIR/py_*.wasm.stamp).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 64
fi

repo="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
cd "$repo"

sdk="$repo/guest-sdk/python"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
venv="$target/py-guest-venv"
requirements="$sdk/requirements.txt"
marker="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$marker" 2>/dev/null)" != "$want" ]; then
  echo "installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  echo "$want" > "$marker"
fi

status=0
for app in "$repo"/jobs/python/*/app.py; do
  dir="$(dirname "$app")"
  name="$(basename "$dir")"
  world=()
  if [ -e "$dir/BATCH" ]; then
    world=(--batch)
  fi
  if ! PYTHONPATH="$sdk/src" "$venv/bin/python" -m airlock_sdk.build "$dir" \
      -o "$out/py_${name//-/_}.wasm" ${world[@]+"${world[@]}"}; then
    status=1
  fi
done
exit $status
