#!/usr/bin/env bash
# The demo: sets up, builds, starts the bundled scripted upstream and the
# exporter probing it, and shows live metrics. Ctrl-C stops everything.
# DEMO_SECONDS=60 bounds the run; DEMO_PORT picks the exporter port (9687).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup.sh demo
BUILD_TARGET=llm_stream_exporter bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/exporter/llm_stream_exporter
WORK=$(mktemp -d /tmp/lse-demo.XXXXXX)
PORT=${DEMO_PORT:-9687}
cleanup() {
  [ -n "${EXP_PID:-}" ] && kill "$EXP_PID" 2>/dev/null || true
  [ -n "${UP_PID:-}" ] && kill "$UP_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

python3 tests/upstream/upstream.py --host 127.0.0.1 --port 0 --port-file "$WORK/upstream.port" \
  2>"$WORK/upstream.log" &
UP_PID=$!
for _ in $(seq 100); do [ -s "$WORK/upstream.port" ] && break; sleep 0.05; done
UPSTREAM="http://127.0.0.1:$(cat "$WORK/upstream.port")"
sed -e "s#UPSTREAM_URL#$UPSTREAM#g" -e "s#file: prompts/#file: $ROOT/config/prompts/#" \
    -e "s#127.0.0.1:9687#127.0.0.1:$PORT#" config/demo.yaml > "$WORK/demo.yaml"
"$BIN" check-config "$WORK/demo.yaml"
"$BIN" serve --config.file "$WORK/demo.yaml" 2>"$WORK/exporter.log" &
EXP_PID=$!
echo "upstream: $UPSTREAM   exporter: http://127.0.0.1:$PORT/  (logs in $WORK)"
sleep 1
python3 scripts/live_view.py --url "http://127.0.0.1:$PORT/metrics" --seconds "${DEMO_SECONDS:-0}"
echo
echo "Selected series from http://127.0.0.1:$PORT/metrics:"
METRICS=$(curl -s "http://127.0.0.1:$PORT/metrics")
# Which dialect each target speaks, then what its probes saw.
grep -E '^llm_stream_target_info' <<<"$METRICS" || true
grep -E '^llm_stream_(stalls_total|probes_total|probe_failures_total\{[^}]*\} [1-9])' <<<"$METRICS" | head -20 || true
