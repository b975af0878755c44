#!/usr/bin/env bash
# The sanitizer stages of CI (issue 13 §6). Each builds its own tree
# unoptimised (-O0 -g1: a third of the optimised build's compile time; the
# tests are I/O-bound) and runs tests against that build:
#
#   scripts/sanitize.sh address   ASan + UBSan (build-asan): every unit test,
#                                 then the integration tests of bad input,
#                                 failures, reloads, logs, TLS and stopping,
#                                 against the sanitized exporter binary;
#   scripts/sanitize.sh thread    TSan (build-tsan): the multi-threaded unit
#                                 tests (server thread, probe thread, service,
#                                 reload, scheduler) and the reload and
#                                 signal integration tests.
#
# A finding fails the stage: UBSan stops at the first undefined behaviour,
# ASan/LSan/TSan write their reports to a folder (log_path) that must stay
# empty, including for exporter processes the integration tests start and
# stop. Environment: ASAN_BUILD_DIR / TSAN_BUILD_DIR (build folders),
# SANITIZE_ITESTS (a ctest -R regex replacing the integration selection).
# `scripts/sanitize.sh address|thread build` only builds the tree (CI builds
# both while the main ctest runs, then runs the stages against them).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-}"
only_build=0
case "${2:-}" in
  "") ;;
  build) only_build=1 ;;
  *) echo "usage: scripts/sanitize.sh address|thread [build]" >&2; exit 2 ;;
esac
case "$kind" in
  address)
    dir="${ASAN_BUILD_DIR:-build-asan}"
    targets=()  # everything: every unit test binary and the exporter
    itests='integration\.test_(failures|row_errors|logs|reload|tls|web_config|no_data_lost|secret_echo|dialects|run_cli)$'
    ;;
  thread)
    dir="${TSAN_BUILD_DIR:-build-tsan}"
    targets=(llm_stream_exporter unit_server unit_service unit_schedule unit_log)  # run whole
    itests='integration\.test_(reload|no_data_lost)$'
    ;;
  *) echo "usage: scripts/sanitize.sh address|thread [build]" >&2; exit 2 ;;
esac
itests="${SANITIZE_ITESTS:-$itests}"

reports="$(mktemp -d /tmp/lse-sanitizer.XXXXXX)"
trap 'rm -rf "$reports"' EXIT
start=$(date +%s)
cmake -S . -B "$dir" -DLSE_SANITIZE="$kind" -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1" -DLSE_WERROR=ON -DLSE_BUILD_BENCH=OFF >/dev/null
if [ ${#targets[@]} -eq 0 ]; then
  cmake --build "$dir" -j"$(nproc)"
else
  cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"
fi
built=$(date +%s)
echo "sanitize $kind: built in $((built - start)) s"
[ "$only_build" -eq 1 ] && exit 0

# halt_on_error: the first report ends the process (a test sees it fail);
# log_path: every report also lands in $reports, where the stage looks.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:log_path=$reports/asan:strict_string_checks=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="log_path=$reports/lsan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$reports/tsan"

status=0
if [ "$kind" = address ]; then
  (cd "$dir" && ctest --output-on-failure --timeout 300 -j"$(nproc)" -L unit) || status=1
else
  for t in "${targets[@]}"; do
    case "$t" in unit_*) timeout 600 "$dir/tests/$t" --gtest_brief=1 || status=1 ;; esac
  done
fi
# Integration tests start the sanitized exporter (LSE_BIN is this build's).
(cd "$dir" && ctest --output-on-failure --timeout 600 -R "$itests") || status=1

if compgen -G "$reports/*" >/dev/null; then
  echo "sanitize $kind: sanitizer reports:" >&2
  for f in "$reports"/*; do
    echo "--- $f" >&2
    head -c 20000 "$f" >&2
  done
  status=1
fi
echo "sanitize $kind: $( [ $status -eq 0 ] && echo clean || echo FAILED ) in $(($(date +%s) - start)) s"
exit $status
