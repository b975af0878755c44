#!/usr/bin/env bash
# Installs the pinned Dockerfile linter (dockerfile-utils, exact versions in
# tests/deploy/dockerlint/package-lock.json) with tests/support/npm_pinned.sh,
# once. Prints the linter's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin=node_modules/.bin/dockerfile-utils
dest="$(bash "$here/../support/npm_pinned.sh" "$here/dockerlint" dockerlint "$bin")"
echo "$dest/$bin"
