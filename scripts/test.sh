#!/usr/bin/env bash
# Sets up, builds (warnings as errors), lints and runs every test (unit,
# integration with the scripted upstream, a real nginx and a real Prometheus,
# deploy checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Warnings are errors here (CI); a plain scripts/build.sh only shows them.
bash scripts/build.sh -DLSE_WERROR=ON
# clang-format, function lengths, clang-tidy (issue 14 §7).
bash scripts/lint.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j"${CTEST_JOBS:-1}" "$@"
