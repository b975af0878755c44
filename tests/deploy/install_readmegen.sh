#!/usr/bin/env bash
# Installs the pinned chart README generator (@bitnami/readme-generator-for-helm, exact
# versions in tests/deploy/readmegen/package-lock.json) with tests/support/npm_pinned.sh,
# once. Prints the generator's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin=node_modules/.bin/readme-generator
dest="$(bash "$here/../support/npm_pinned.sh" "$here/readmegen" readmegen "$bin")"
echo "$dest/$bin"
