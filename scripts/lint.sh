#!/usr/bin/env bash
# The tools that keep the house in order (issue 14 §7), as CI runs them:
#   1. clang-format: every C++ source is formatted (.clang-format);
#   2. function lengths: none over 80 lines (scripts/function_lengths.sh);
#   3. clang-tidy: zero findings with the checks of .clang-tidy, over every
#      source under exporter/ (needs BUILD_DIR/compile_commands.json: run
#      scripts/build.sh first);
#   4. logs: every log event goes through log/log.hpp (structured fields,
#      escaped values), never spdlog's format strings directly.
# Usage: scripts/lint.sh [format|length|tidy|logs]...   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(format length logs tidy)

sources() { git ls-files --cached --others --exclude-standard "$@" 2>/dev/null || find "$@" -type f; }

for step in "${steps[@]}"; do
  case "$step" in
    format)
      mapfile -t files < <(sources 'exporter/*.cpp' 'exporter/*.hpp' 'tests/*.cpp' 'tests/*.hpp')
      clang-format --dry-run -Werror "${files[@]}"
      echo "lint: clang-format clean (${#files[@]} files)"
      ;;
    length)
      bash scripts/function_lengths.sh 80 5
      ;;
    tidy)
      [ -f "$BUILD_DIR/compile_commands.json" ] ||
        { echo "lint: $BUILD_DIR/compile_commands.json missing (run scripts/build.sh)" >&2; exit 2; }
      mapfile -t files < <(sources 'exporter/*.cpp')
      start=$(date +%s)
      # One process per file, two at a time (the machine's cores); any
      # finding is an error (WarningsAsErrors in .clang-tidy). Boost 1.74's
      # Asio only enables co_await for clang with libc++'s
      # <experimental/coroutine>; clang 14 does implement C++20 coroutines
      # with libstdc++'s <coroutine>, so tell both what the compiler has.
      printf '%s\n' "${files[@]}" |
        xargs -P "${LINT_JOBS:-$(nproc)}" -n 1 clang-tidy -p "$BUILD_DIR" --quiet \
          --extra-arg=-D__cpp_impl_coroutine=201902L \
          --extra-arg=-DBOOST_ASIO_HAS_CO_AWAIT=1 \
          --extra-arg=-DBOOST_ASIO_HAS_STD_COROUTINE=1 2>/dev/null
      echo "lint: clang-tidy clean (${#files[@]} files, $(( $(date +%s) - start )) s)"
      ;;
    logs)
      if grep -rnE 'spdlog::(trace|debug|info|warn|error|critical)\(' exporter \
          --include='*.cpp' --include='*.hpp' --exclude-dir=log; then
        echo "lint: log through log::debug/info/warn/error (exporter/log/log.hpp), not spdlog" >&2
        exit 1
      fi
      echo "lint: every log event is structured"
      ;;
    *) echo "usage: scripts/lint.sh [format|length|tidy|logs]..." >&2; exit 2 ;;
  esac
done
