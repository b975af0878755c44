#!/usr/bin/env bash
# Builds the stream-path libFuzzer target (every dialect, SSE and NDJSON
# framing) with clang++-14 (ASan + UBSan, no CMake) and runs it for a bounded
# time. See tests/fuzz/README.md for what it covers.
#
#   tests/fuzz/build_and_run.sh [SECONDS] [extra libFuzzer args...]
#
# SECONDS defaults to 60; 0 only builds. Environment:
#   FUZZ_OUT  build/work directory (default /tmp/lse-fuzz): the binary, the
#             seeds, the growing corpus and crash-*/leak-*/timeout-*
#             reproducers are written there, never into the repository.
#   CXX       compiler (default clang++-14).
# A reproducer is replayed with: $FUZZ_OUT/sse_api_fuzz FILE
# Runs in one process (no -jobs/-workers): the machine's cores are shared.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
seconds="${1:-60}"
shift || true
out="${FUZZ_OUT:-/tmp/lse-fuzz}"
cxx="${CXX:-clang++-14}"

mkdir -p "${out}/corpus" "${out}/artifacts" "${out}/seeds"

# Every exporter source the target reaches: both framing decoders, the
# dialect registry and every adapter, and the JSON writer of build_body.
"${cxx}" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"${root}/exporter" \
  "${here}/sse_api_fuzz.cpp" \
  "${root}/exporter/sse/decoder.cpp" \
  "${root}/exporter/ndjson/decoder.cpp" \
  "${root}"/exporter/api/*.cpp \
  "${root}/exporter/util/json.cpp" \
  -lsimdjson -lfmt \
  -o "${out}/sse_api_fuzz"

# Seeds: every recorded stream in tests/fixtures/sse once per dialect. The
# first input byte is the control byte (byte % 7 = index in kAllDialects,
# limit 1 MiB, max_tokens 16), the rest is the recorded body, so one corpus
# serves every dialect and each recording also meets the other adapters.
# tests/fixtures/fuzz-seeds/, when present, holds further recordings.
rm -f "${out}/seeds/"*
for fixture in "${root}"/tests/fixtures/sse/*.sse "${root}"/tests/fixtures/sse/*.ndjson \
  "${root}"/tests/fixtures/fuzz-seeds/*; do
  [[ -f "${fixture}" ]] || continue
  for dialect in 0 1 2 3 4 5 6; do
    seed="${out}/seeds/${dialect}-$(basename "${fixture}")"
    printf "\\x0${dialect}" >"${seed}"
    cat "${fixture}" >>"${seed}"
  done
done

[[ "${seconds}" == 0 ]] && exit 0

# The first corpus dir is writable (libFuzzer adds new inputs there); the
# seeds are read only.
exec "${out}/sse_api_fuzz" "${out}/corpus" "${out}/seeds" \
  -max_total_time="${seconds}" -max_len=131072 -timeout=10 -rss_limit_mb=2048 \
  -dict="${here}/stream.dict" -artifact_prefix="${out}/artifacts/" -print_final_stats=1 "$@"
