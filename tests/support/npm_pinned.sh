#!/usr/bin/env bash
# Installs an npm tool pinned by a package-lock.json, from the npm registry
# with `npm ci`, into ${LSE_DEPLOY_TOOLS:-<repo>/${BUILD_DIR:-build}/deploy-tools}/NAME,
# once (again only when the lock file changes or INSTALLED is missing).
# Prints the folder that holds node_modules. Exits 1 with a reason when npm
# or the registry is not there.
#
#   tests/support/npm_pinned.sh LOCK_DIR NAME INSTALLED
#
# LOCK_DIR holds package.json and package-lock.json; INSTALLED is a path
# below the install folder that exists once the install is complete.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: npm_pinned.sh LOCK_DIR NAME INSTALLED" >&2; exit 2; }
lock_dir="$1" name="$2" installed="$3"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bd="${BUILD_DIR:-build}"
case "$bd" in /*) ;; *) bd="$root/$bd" ;; esac
dest="${LSE_DEPLOY_TOOLS:-$bd/deploy-tools}/$name"
command -v npm >/dev/null || { echo "npm not found (Debian: apt-get install npm)" >&2; exit 1; }
mkdir -p "$dest"
if [ ! -e "$dest/$installed" ] || ! cmp -s "$lock_dir/package-lock.json" "$dest/package-lock.json"; then
  cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$dest/"
  (cd "$dest" && timeout 300 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
fi
echo "$dest"
