#!/usr/bin/env bash
# Builds the dashboard into host/ui/dist/ (index.html, app.js, app.css),
# which the airlock binary embeds at build time (host/build.rs):
#
#   host/ui/build.sh
#
# Dependencies are installed with `npm ci` only when node_modules is missing
# or older than the lockfile; a build whose sources, build script and
# lockfile did not change is skipped (a hash stamp in dist/), so calling this
# every time is cheap and needs no network after the first install.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

command -v node >/dev/null || { echo "build.sh: node (>= 20) is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "build.sh: npm is required" >&2; exit 1; }

marker="node_modules/.package-lock.json"
if [ ! -f "$marker" ] || [ package-lock.json -nt "$marker" ]; then
  echo "build.sh: npm ci in $here" >&2
  npm ci --no-audit --no-fund --prefer-offline --loglevel=error >&2
fi

stamp="dist/.build-hash"
hash="$( (
  cat package-lock.json build.mjs
  find src -type f | LC_ALL=C sort | while read -r f; do printf '%s\n' "$f"; cat "$f"; done
) | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] && [ -f dist/index.html ] && [ -f dist/app.js ] && [ -f dist/app.css ]; then
  exit 0
fi
node build.mjs
echo "$hash" > "$stamp"
