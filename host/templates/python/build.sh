#!/usr/bin/env bash
# Builds {{name}}.wasm, the Airlock handler component, from app.py:
#   ./build.sh            (./build.sh --force rebuilds even when up to date)
#
# It writes into this folder (and pip's download cache), never into the
# Airlock checkout the SDK comes from ({{sdk_path}}):
# - the first run creates .venv with the componentize-py the SDK pins
#   (its requirements.txt); later runs reuse it, until the pin changes;
# - every run copies the SDK (src/, wit/, requirements.txt) and the contract
#   (wit/airlock.wit) from the checkout into .venv/airlock, laid out as in
#   the checkout, and builds with that copy: componentize-py writes Python
#   bytecode (__pycache__) next to the sources it is given, so it must not
#   be given the checkout's. .venv/bin/python imports the SDK from the copy
#   too (a .pth file), for `.venv/bin/python -m unittest` and editors.
set -euo pipefail
cd "$(dirname "$0")"

sdk="{{sdk_path}}"
venv=".venv"
requirements="$sdk/requirements.txt"
contract="$sdk/../../wit/airlock.wit"
for f in "$requirements" "$contract"; do
  [ -f "$f" ] || { echo "build.sh: $f is missing: is the Airlock checkout still at $sdk?" >&2; exit 1; }
done
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.airlock-requirements" 2>/dev/null)" != "$want" ]; then
  echo "setting up $venv: $(grep -v '^#' "$requirements" | tr '\n' ' ')(~70 MB, once)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  echo "$want" > "$venv/.airlock-requirements"
fi

copy="$venv/airlock"
rm -rf "$copy.new"
mkdir -p "$copy.new/guest-sdk/python" "$copy.new/wit"
tar -C "$sdk" --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' -cf - src wit requirements.txt \
  | tar -C "$copy.new/guest-sdk/python" -xf -
cp "$contract" "$copy.new/wit/airlock.wit"
rm -rf "$copy"
mv "$copy.new" "$copy"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$PWD/$copy/guest-sdk/python/src" > "$site/airlock-sdk.pth"

exec "$venv/bin/python" -m airlock_sdk.build . -o "{{name}}.wasm" "$@"
