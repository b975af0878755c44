#!/usr/bin/env bash
# Installs the pinned express + compression (exact versions in
# tests/integration/express/package-lock.json) from the npm registry with
# `npm ci` into ${LSE_DEPLOY_TOOLS:-<repo>/${BUILD_DIR:-build}/deploy-tools}/express,
# once (again only when the lock file changes). Prints the folder that holds
# node_modules and proxy.js. Exits 1 with a reason when npm or the registry
# is not there (test_buffered.py then skips its express case, visibly).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bd="${BUILD_DIR:-build}"
case "$bd" in /*) ;; *) bd="$root/$bd" ;; esac
dest="${LSE_DEPLOY_TOOLS:-$bd/deploy-tools}/express"
command -v npm >/dev/null || { echo "npm not found (Debian: apt-get install npm)" >&2; exit 1; }
mkdir -p "$dest"
if [ ! -d "$dest/node_modules/compression" ] ||
    ! cmp -s "$here/express/package-lock.json" "$dest/package-lock.json"; then
  cp "$here/express/package.json" "$here/express/package-lock.json" "$dest/"
  (cd "$dest" && timeout 300 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
fi
cp "$here/express/proxy.js" "$dest/"
echo "$dest"
