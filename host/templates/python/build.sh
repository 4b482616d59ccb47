#!/usr/bin/env bash
# Builds {{name}}.wasm, the Airlock handler component, from app.py:
#   ./build.sh            (./build.sh --force rebuilds even when up to date)
# The first run creates .venv with the pinned componentize-py and the Airlock
# Python SDK ({{sdk_path}}, installed editable); later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")"

sdk="{{sdk_path}}"
venv=".venv"
requirements="$sdk/requirements.txt"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.airlock-requirements" 2>/dev/null)" != "$want" ]; then
  echo "setting up $venv (componentize-py and the Airlock SDK)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" -e "$sdk"
  echo "$want" > "$venv/.airlock-requirements"
fi

exec "$venv/bin/python" -m airlock_sdk.build . -o "{{name}}.wasm" "$@"
