#!/usr/bin/env bash
# Sets up, builds and runs every test (unit, integration with the scripted
# upstream, a real nginx and a real Prometheus, deploy checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j"${CTEST_JOBS:-1}" "$@"
