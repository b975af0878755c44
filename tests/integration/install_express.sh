#!/usr/bin/env bash
# Installs the pinned express + compression (exact versions in
# tests/integration/express/package-lock.json) with tests/support/npm_pinned.sh,
# once. Prints the folder that holds node_modules and proxy.js. Exits 1 with a
# reason when npm or the registry is not there (test_buffered.py then skips
# its express case, visibly).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$(bash "$here/../support/npm_pinned.sh" "$here/express" express node_modules/compression)"
cp "$here/express/proxy.js" "$dest/"
echo "$dest"
