#!/usr/bin/env bash
# Builds the TypeScript example handlers into Airlock components:
#
#   jobs/js/build.sh OUTDIR
#
# writes OUTDIR/js_<name>.wasm for every example folder here (StarlingMonkey;
# a folder's airlock-build.json may ask for `{"batch": true}`, world
# batch-handler) plus OUTDIR/js_noop_qjs.wasm and OUTDIR/js_payment_webhook_qjs.wasm
# (QuickJS). A component whose sources, SDK and toolchain did not change is
# not rebuilt (a hash stamp next to it), so calling this every time is cheap.
# This folder's dependencies (TypeScript and a link to the SDK) are installed
# with `npm ci` only when node_modules is missing or older than the lockfile.
# The build toolchain (esbuild, componentize-js, componentize-qjs, pinned by
# guest-sdk/js/toolchain/package-lock.json) is what every airlock-build uses:
# installed by the first build on the machine into
# ${AIRLOCK_JS_TOOLCHAIN:-${XDG_CACHE_HOME:-~/.cache}/airlock/js-toolchain/<id>}
# and shared with every project's builds. After both installs no network is
# needed.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"

command -v node >/dev/null || { echo "build.sh: node (>= 20) is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "build.sh: npm is required" >&2; exit 1; }

# npm ci in $1 unless its node_modules matches its lockfile already.
ensure_deps() {
  local dir="$1"
  local marker="$dir/node_modules/.package-lock.json"
  if [ ! -f "$marker" ] || [ "$dir/package-lock.json" -nt "$marker" ]; then
    echo "build.sh: npm ci in $dir" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error) >&2
  fi
}
ensure_deps "$here"

exec node "$here/build.mjs" "$out"
