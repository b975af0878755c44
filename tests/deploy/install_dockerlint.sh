#!/usr/bin/env bash
# Installs the pinned Dockerfile linter (dockerfile-utils, exact versions in
# tests/deploy/dockerlint/package-lock.json) from the npm registry with `npm ci`
# into ${LSE_DEPLOY_TOOLS:-<repo>/${BUILD_DIR:-build}/deploy-tools}/dockerlint,
# once (again only when the lock file changes). Prints the linter's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bd="${BUILD_DIR:-build}"
case "$bd" in /*) ;; *) bd="$root/$bd" ;; esac
tools="${LSE_DEPLOY_TOOLS:-$bd/deploy-tools}"
dest="$tools/dockerlint"
bin="$dest/node_modules/.bin/dockerfile-utils"
command -v npm >/dev/null || { echo "npm not found (Debian: apt-get install npm)" >&2; exit 1; }
mkdir -p "$dest"
if [ ! -x "$bin" ] || ! cmp -s "$here/dockerlint/package-lock.json" "$dest/package-lock.json"; then
  cp "$here/dockerlint/package.json" "$here/dockerlint/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
fi
echo "$bin"
