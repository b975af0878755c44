#!/usr/bin/env bash
# Sets up, builds (warnings as errors), lints and runs every test (unit,
# integration with the scripted upstream, a real nginx and a real Prometheus,
# deploy checks), then the hardening stages: the unit and integration tests
# again under ASan+UBSan and the multi-threaded ones under TSan
# (scripts/sanitize.sh), and every libFuzzer target for FUZZ_SECONDS each
# (tests/fuzz/fuzz_all.sh). LSE_QUICK=1 stops after the first ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
stage() { echo "test.sh: $1 done at +$(( $(date +%s) - t0 )) s"; }
bash scripts/setup.sh
# Warnings are errors here (CI); a plain scripts/build.sh only shows them.
bash scripts/build.sh -DLSE_WERROR=ON
# clang-format, function lengths, clang-tidy (issue 14 §7).
bash scripts/lint.sh
stage "build and lint"
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 600 -j"${CTEST_JOBS:-2}" "$@")
stage ctest
[ -n "${LSE_QUICK:-}" ] && exit 0
bash scripts/sanitize.sh address
stage "ASan+UBSan"
bash scripts/sanitize.sh thread
stage TSan
bash tests/fuzz/fuzz_all.sh "${FUZZ_SECONDS:-30}"
stage fuzz
