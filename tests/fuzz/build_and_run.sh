#!/usr/bin/env bash
# Builds the SSE/API libFuzzer target with clang++-14 (ASan + UBSan, no CMake)
# and runs it for a bounded time over tests/fixtures/sse as seed corpus.
#
#   tests/fuzz/build_and_run.sh [SECONDS] [extra libFuzzer args...]
#
# SECONDS defaults to 60. Environment:
#   FUZZ_OUT  build/work directory (default /tmp/lse-fuzz); new corpus
#             entries and crash-* reproducers are written there, never into
#             the repository's fixtures.
#   CXX       compiler (default clang++-14).
# A crash reproducer can be replayed with: $FUZZ_OUT/sse_api_fuzz CRASH_FILE
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
seconds="${1:-60}"
shift || true
out="${FUZZ_OUT:-/tmp/lse-fuzz}"
cxx="${CXX:-clang++-14}"

mkdir -p "${out}/corpus" "${out}/artifacts"

"${cxx}" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"${root}/exporter" \
  "${here}/sse_api_fuzz.cpp" \
  "${root}/exporter/sse/decoder.cpp" \
  "${root}"/exporter/api/*.cpp \
  "${root}/exporter/util/json.cpp" \
  -lsimdjson -lfmt \
  -o "${out}/sse_api_fuzz"

# First corpus dir is writable (libFuzzer adds new inputs there); the fixtures
# are read-only seeds.
exec "${out}/sse_api_fuzz" "${out}/corpus" "${root}/tests/fixtures/sse" \
  -max_total_time="${seconds}" -max_len=131072 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="${out}/artifacts/" -print_final_stats=1 "$@"
