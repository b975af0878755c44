#!/usr/bin/env bash
# Installs the pinned chart README generator (@bitnami/readme-generator-for-helm, exact
# versions in tests/deploy/readmegen/package-lock.json) from the npm registry with
# `npm ci` into ${LSE_DEPLOY_TOOLS:-<repo>/${BUILD_DIR:-build}/deploy-tools}/readmegen,
# once (again only when the lock file changes). Prints the generator's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bd="${BUILD_DIR:-build}"
case "$bd" in /*) ;; *) bd="$root/$bd" ;; esac
tools="${LSE_DEPLOY_TOOLS:-$bd/deploy-tools}"
dest="$tools/readmegen"
bin="$dest/node_modules/.bin/readme-generator"
command -v npm >/dev/null || { echo "npm not found (Debian: apt-get install npm)" >&2; exit 1; }
mkdir -p "$dest"
if [ ! -x "$bin" ] || ! cmp -s "$here/readmegen/package-lock.json" "$dest/package-lock.json"; then
  cp "$here/readmegen/package.json" "$here/readmegen/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
fi
echo "$bin"
