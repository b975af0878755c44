#!/usr/bin/env bash
# Builds every libFuzzer target of tests/fuzz/ with clang++-14 (ASan + UBSan,
# no CMake, the exporter sources each needs compiled in directly) and runs
# each for a bounded time from its in-tree seed corpus. CI runs this; see
# tests/fuzz/README.md.
#
#   tests/fuzz/fuzz_all.sh [SECONDS] [extra libFuzzer args...]
#
# SECONDS per target, default 30; 0 only builds. Environment:
#   FUZZ_TARGETS  the targets to build and run, space separated (default: all
#                 of them, in the order of TARGETS below).
#   FUZZ_OUT      build/work directory (default /tmp/lse-fuzz-all), never in the
#                 repository: obj/ (object files, reused while their sources
#                 and headers are unchanged), bin/<target>, and per target
#                 <target>/corpus (the growing corpus), <target>/artifacts
#                 (crash-/leak-/timeout-/oom- reproducers), <target>/fuzz.log.
#   FUZZ_JOBS     how many targets fuzz side by side (default 1).
#   CXX           compiler (default clang++-14).
# Exits non-zero when a target does not build or finds a crash, leak,
# timeout or out-of-memory, printing each reproducer and its replay command.
# Prints per target the executions, the final cov/ft/corp of libFuzzer and
# the files in its corpus directory, then a table with the build times.
# One compiler at a time and FUZZ_JOBS fuzzer processes (default 1; no
# -jobs/-workers): the machine's cores are shared. Everything runs under nice -n 19.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
src="${root}/exporter"
seconds="${1:-30}"
shift || true
extra_args=("$@")
out="${FUZZ_OUT:-/tmp/lse-fuzz-all}"
cxx="${CXX:-clang++-14}"

TARGETS=(sse_api_fuzz config_fuzz http_response_fuzz http_request_fuzz rows_fuzz h2_session_fuzz)
read -r -a selected <<<"${FUZZ_TARGETS:-${TARGETS[*]}}"

# --- what each target is made of ---------------------------------------------
# Exporter sources (relative to exporter/, globs allowed) and system libraries.
sources_of() {
  case "$1" in
    sse_api_fuzz) echo "sse/decoder.cpp ndjson/decoder.cpp api/*.cpp util/json.cpp" ;;
    config_fuzz) echo "config/*.cpp api/*.cpp sse/decoder.cpp net/*.cpp util/*.cpp" ;;
    http_response_fuzz)
      echo "http/response_reader.cpp http/response_reader_h2.cpp http/content_decoder.cpp http/fault.cpp" \
        "h2/*.cpp sse/decoder.cpp ndjson/decoder.cpp"
      ;;
    http_request_fuzz)
      echo "server/routes.cpp server/encoding.cpp server/negotiation.cpp server/landing_page.cpp" \
        "server/probe_page.cpp server/page_verdict.cpp server/page_parts.cpp util/bounded_file.cpp" \
        "report/row_store.cpp report/row_json.cpp report/jsonl_appender.cpp report/diagnosis.cpp" \
        "report/format.cpp report/stats.cpp report/html.cpp report/summary.cpp probe/timeline.cpp util/json.cpp util/wall_clock.cpp"
      ;;
    rows_fuzz)
      echo "report/row_json.cpp report/rows_file.cpp report/jsonl_appender.cpp util/json.cpp" \
        "util/bounded_file.cpp"
      ;;
    h2_session_fuzz) echo "h2/*.cpp" ;;
    *) return 1 ;;
  esac
}
# Sources generated at build time (written under $FUZZ_OUT/gen/), as CMake makes them:
# config/ needs the compiled-in default prompts (exporter/config/built_in_prompts.cmake).
generated_of() {
  case "$1" in
    config_fuzz)
      cmake -DPROMPTS_DIR="${root}/config/prompts" -DPROMPT_NAMES=short,medium,long \
        -DOUTPUT="${out}/gen/config/built_in_prompts.cpp" \
        -P "${src}/config/built_in_prompts.cmake" >&2 || return 1
      echo "${out}/gen/config/built_in_prompts.cpp"
      ;;
  esac
}
libs_of() {
  case "$1" in
    sse_api_fuzz) echo "-lsimdjson -lfmt" ;;
    config_fuzz) echo "-lyaml-cpp -lsimdjson -lfmt" ;;
    http_response_fuzz) echo "-lz -lbrotlidec -lssl -lcrypto -lnghttp2 -lfmt" ;;
    http_request_fuzz) echo "-lyaml-cpp -lsimdjson -lfmt -lz" ;;
    rows_fuzz) echo "-lsimdjson -lfmt" ;;
    h2_session_fuzz) echo "-lnghttp2 -lfmt" ;;
  esac
}
# Read-only seed directories besides tests/fuzz/corpus/<target>/.
extra_seeds_of() {
  case "$1" in
    sse_api_fuzz) echo "${out}/sse_api_fuzz/seeds" ;;  # made from tests/fixtures/sse below
    config_fuzz) echo "${root}/tests/data/config" ;;
    rows_fuzz) echo "${root}/tests/data/rows" ;;
  esac
}
dict_of() {
  case "$1" in
    sse_api_fuzz) echo "${here}/stream.dict" ;;
    *) if [[ -f "${here}/${1%_fuzz}.dict" ]]; then echo "${here}/${1%_fuzz}.dict"; fi ;;
  esac
}
max_len_of() {
  case "$1" in
    sse_api_fuzz) echo 131072 ;;
    config_fuzz) echo 16384 ;;
    http_response_fuzz) echo 65536 ;;
    http_request_fuzz) echo 16384 ;;
    rows_fuzz) echo 65536 ;;
    h2_session_fuzz) echo 131072 ;;
  esac
}

for t in "${selected[@]}"; do
  sources_of "${t}" >/dev/null || {
    echo "fuzz_all.sh: unknown target '${t}' (known: ${TARGETS[*]})" >&2
    exit 2
  }
done

script_start=$(date +%s)
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=undefined -I"${src}")
mkdir -p "${out}/obj" "${out}/bin"

# --- building: one compiler process at a time --------------------------------

# True when $2 (an object) is missing, was built from another tree than $1
# (its source; the objects outlive a checkout, so a .d of another clone must
# not vouch for this one), or is older than a file its .d lists.
stale() {
  local source="$1" obj="$2" dep
  [[ -f "${obj}" && -f "${obj%.o}.d" ]] || return 0
  grep -qF " ${source} " <(tr -d '\\\n' <"${obj%.o}.d" | tr -s ' ' | sed 's/$/ /') || return 0
  while read -r dep; do
    [[ -z "${dep}" || "${dep}" == *: ]] && continue
    [[ -e "${dep}" && "${dep}" -nt "${obj}" ]] && return 0
    [[ -e "${dep}" ]] || return 0
  done < <(sed -e 's/\\$//' -e 's/^[^:]*: *//' "${obj%.o}.d" | tr ' ' '\n')
  return 1
}

# compile SOURCE OBJECT [sanitizer flag]
compile() {
  local source="$1" obj="$2" sanitize="${3:--fsanitize=fuzzer-no-link,address,undefined}"
  stale "${source}" "${obj}" || return 0
  mkdir -p "$(dirname "${obj}")"
  echo "  compile ${source#"${root}"/}"
  nice -n 19 "${cxx}" "${flags[@]}" "${sanitize}" -MMD -MF "${obj%.o}.d" -c "${source}" -o "${obj}"
}

declare -A build_seconds
build() {
  local t="$1" start objs=() pattern f rel
  start=$(date +%s%N)
  echo "== build ${t}"
  for pattern in $(sources_of "${t}"); do
    for f in "${src}"/${pattern}; do
      [[ -f "${f}" ]] || { echo "  no source ${f}" >&2; return 1; }
      rel="${f#"${src}"/}"
      compile "${f}" "${out}/obj/${rel%.cpp}.o" || return 1
      objs+=("${out}/obj/${rel%.cpp}.o")
    done
  done
  local generated
  generated="$(generated_of "${t}")" || { echo "  cannot generate the sources of ${t}" >&2; return 1; }
  for f in ${generated}; do
    rel="gen/${f#"${out}"/gen/}"
    compile "${f}" "${out}/obj/${rel%.cpp}.o" || return 1
    objs+=("${out}/obj/${rel%.cpp}.o")
  done
  compile "${here}/${t}.cpp" "${out}/obj/fuzz/${t}.o" "-fsanitize=fuzzer,address,undefined" ||
    return 1
  echo "  link bin/${t}"
  # shellcheck disable=SC2046
  nice -n 19 "${cxx}" "${flags[@]}" -fsanitize=fuzzer,address,undefined \
    "${out}/obj/fuzz/${t}.o" "${objs[@]}" $(libs_of "${t}") -o "${out}/bin/${t}" || return 1
  build_seconds[${t}]=$((($(date +%s%N) - start) / 1000000000))
  echo "  built in ${build_seconds[${t}]} s"
}

# The stream target's seeds: every recording of tests/fixtures/sse once per
# dialect (control byte 0..6 first), as build_and_run.sh makes them.
make_sse_seeds() {
  local dir="${out}/sse_api_fuzz/seeds" fixture dialect
  rm -rf "${dir}"
  mkdir -p "${dir}"
  for fixture in "${root}"/tests/fixtures/sse/*.sse "${root}"/tests/fixtures/sse/*.ndjson; do
    [[ -f "${fixture}" ]] || continue
    for dialect in 0 1 2 3 4 5 6; do
      printf "\\x0${dialect}" >"${dir}/${dialect}-$(basename "${fixture}")"
      cat "${fixture}" >>"${dir}/${dialect}-$(basename "${fixture}")"
    done
  done
}

failed_builds=()
for t in "${selected[@]}"; do
  if ! build "${t}"; then
    echo "!! ${t} does not build" >&2
    failed_builds+=("${t}")
  fi
done
[[ "${seconds}" == 0 ]] && { [[ ${#failed_builds[@]} -eq 0 ]]; exit $?; }

# --- running: FUZZ_JOBS targets at a time -----------------------------------

# Runs one target; its summary line goes to <target>/summary and its findings
# (reproducers and replay commands) to <target>/findings, read back below.
run_target() {
  local t="$1" dir seeds s args dict before after status last execs cov ft corp new_files fresh
  local verdict a
  dir="${out}/${t}"
  mkdir -p "${dir}/corpus" "${dir}/artifacts"
  : >"${dir}/findings"
  [[ "${t}" == sse_api_fuzz ]] && make_sse_seeds
  seeds=()
  [[ -d "${here}/corpus/${t}" ]] && seeds+=("${here}/corpus/${t}")
  for s in $(extra_seeds_of "${t}"); do [[ -d "${s}" ]] && seeds+=("${s}"); done
  args=(-max_total_time="${seconds}" -rss_limit_mb=2048 -timeout=10 -max_len="$(max_len_of "${t}")"
    -artifact_prefix="${dir}/artifacts/" -print_final_stats=1)
  dict="$(dict_of "${t}")"
  [[ -n "${dict}" ]] && args+=(-dict="${dict}")
  before="$(ls "${dir}/artifacts")"
  echo "== run ${t} for ${seconds} s (seeds: ${seeds[*]#"${root}"/})"
  status=0
  nice -n 19 "${out}/bin/${t}" "${dir}/corpus" "${seeds[@]}" "${args[@]}" "${extra_args[@]}" \
    >"${dir}/fuzz.log" 2>&1 || status=$?
  last="$(grep -aE '^#[0-9]+' "${dir}/fuzz.log" | grep -a ' cov: ' | tail -n 1 || true)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${dir}/fuzz.log" | tail -n 1)"
  [[ -z "${execs}" ]] && execs="$(sed -E -n 's/^#([0-9]+).*/\1/p' <<<"${last}")"
  cov="$(sed -E -n 's/.* cov: ([0-9]+).*/\1/p' <<<"${last}")"
  ft="$(sed -E -n 's/.* ft: ([0-9]+).*/\1/p' <<<"${last}")"
  corp="$(sed -E -n 's/.* corp: ([0-9]+\/[0-9A-Za-z]+).*/\1/p' <<<"${last}")"
  new_files="$(ls "${dir}/corpus" | wc -l)"
  after="$(ls "${dir}/artifacts")"
  fresh="$(comm -13 <(sort <<<"${before}") <(sort <<<"${after}") | grep -v '^$' || true)"
  verdict=ok
  if [[ ${status} -ne 0 || -n "${fresh}" ]]; then
    verdict="FAILED (exit ${status})"
    grep -aE '^(==[0-9]+== ?ERROR|SUMMARY|invariant violated|.*runtime error|.*Assertion)' "${dir}/fuzz.log" |
      head -n 5 | sed "s/^/  ${t}: /" >&2 || true
    for a in ${fresh}; do
      printf '%s\n' "${t}: ${dir}/artifacts/${a}" "  replay: ${out}/bin/${t} ${dir}/artifacts/${a}" \
        >>"${dir}/findings"
    done
    [[ -z "${fresh}" ]] && echo "${t}: exit ${status}, see ${dir}/fuzz.log" >>"${dir}/findings"
  fi
  printf '%-9s %12s %8s %8s %14s %9s\n' "${verdict%% *}" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
    "${corp:-?}" "${new_files}" >"${dir}/summary"
  echo "   ${t}: $(cat "${dir}/summary")"
}

# FUZZ_JOBS targets run side by side (default 1: the machine's cores are
# shared; CI's last stage has both cores to itself and sets it to nproc).
jobs_max="${FUZZ_JOBS:-1}"
declare -A summary
findings=()
run_start=$(date +%s)
for t in "${selected[@]}"; do
  [[ " ${failed_builds[*]} " == *" ${t} "* ]] && continue
  while [[ $(jobs -rp | wc -l) -ge ${jobs_max} ]]; do wait -n || true; done
  run_target "${t}" &
done
wait || true
for t in "${selected[@]}"; do
  if [[ " ${failed_builds[*]} " == *" ${t} "* ]]; then
    summary[${t}]="BUILD FAILED"
    continue
  fi
  if [[ ! -s "${out}/${t}/summary" ]]; then
    summary[${t}]="NO RESULT"
    findings+=("${t}: the run ended without a verdict, see ${out}/${t}/fuzz.log")
    continue
  fi
  summary[${t}]="$(cat "${out}/${t}/summary")"
  while IFS= read -r line; do findings+=("${line}"); done <"${out}/${t}/findings"
done
total=$(($(date +%s) - run_start))

echo
printf '%-20s %7s %-9s %12s %8s %8s %14s %9s\n' target build verdict execs cov ft "corp(n/size)" \
  "saved"
for t in "${selected[@]}"; do
  printf '%-20s %6ss %s\n' "${t}" "${build_seconds[${t}]:-?}" "${summary[${t}]}"
done
echo "fuzzing: ${total} s (${seconds} s per target); whole script: $(($(date +%s) - script_start)) s;" \
  "work dir ${out}"
if [[ ${#failed_builds[@]} -gt 0 || ${#findings[@]} -gt 0 ]]; then
  echo
  echo "FINDINGS:" >&2
  for f in "${findings[@]}"; do echo "  ${f}" >&2; done
  for t in "${failed_builds[@]}"; do echo "  ${t}: does not build" >&2; done
  exit 1
fi
