#!/usr/bin/env bash
# The pictures in README.md and docs/ (docs/demo.md): runs the demo (the bundled scripted
# upstream and the exporter with config/demo.yaml, probing every second) for
# about 25 s, then has headless Chromium photograph at 1,280 x 800:
#   docs/landing.png  the landing page (/)
#   docs/probe.png    the last probe of `stalling-proxy` (/probe?id=...)
#   docs/report.png   `report` of the rows the demo wrote
# Bounded: everything it starts is stopped on exit. Needs chromium
# (scripts/setup.sh all). SHOTS_SECONDS sets the demo's length, SHOTS_OUT
# the folder (docs/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_TARGET=llm_stream_exporter bash scripts/build.sh >/dev/null
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/exporter/llm_stream_exporter
OUT=${SHOTS_OUT:-$ROOT/docs}
SECONDS_RUN=${SHOTS_SECONDS:-25}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
WORK=$(mktemp -d /tmp/lse-shots.XXXXXX)
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
# The demo's targets, probed every second, the exporter on a free port, rows to a file.
sed -e "s#UPSTREAM_URL#$UPSTREAM#g" -e "s#file: prompts/#file: $ROOT/config/prompts/#" \
    -e "s#127.0.0.1:9687#127.0.0.1:0#" -e "s#interval: 5s#interval: 1s#" \
    config/demo.yaml > "$WORK/demo.yaml"
printf 'min_interval: 1s\nrows:\n  path: %s/rows.jsonl\n' "$WORK" >> "$WORK/demo.yaml"
"$BIN" serve --config.file "$WORK/demo.yaml" 2>"$WORK/exporter.log" &
EXP_PID=$!
PORT=""
for _ in $(seq 200); do
  PORT=$(grep -oE 'msg=listening .* port=[0-9]+' "$WORK/exporter.log" | grep -oE '[0-9]+$' | head -1 || true)
  [ -n "$PORT" ] && break
  sleep 0.05
done
[ -n "$PORT" ] || { echo "screenshots: the exporter did not start:" >&2; cat "$WORK/exporter.log" >&2; exit 1; }
BASE="http://127.0.0.1:$PORT"
echo "screenshots: demo at $BASE for ${SECONDS_RUN}s"
sleep "$SECONDS_RUN"

shot() {  # shot URL FILE [HEIGHT]
  local profile
  profile=$(mktemp -d "$WORK/chromium.XXXXXX")
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$profile" --window-size=1280,"${3:-800}" --screenshot="$2" "$1" \
    >/dev/null 2>&1
  rm -rf "$profile"
  [ -s "$2" ] || { echo "screenshots: no picture of $1" >&2; exit 1; }
  echo "screenshots: $2"
}

mkdir -p "$OUT"
shot "$BASE/" "$OUT/landing.png"
PROBE=$(curl -s "$BASE/" | grep -oE 'data-target="stalling-proxy".*' | grep -oE 'probe\?id=[0-9a-f]+' | head -1)
[ -n "$PROBE" ] || { echo "screenshots: stalling-proxy has no probe yet" >&2; exit 1; }
shot "$BASE/$PROBE" "$OUT/probe.png"
kill "$EXP_PID" && wait "$EXP_PID" 2>/dev/null || true
EXP_PID=""
"$BIN" report "$WORK/rows.jsonl" --out "$WORK/report.html" 2>/dev/null
shot "file://$WORK/report.html" "$OUT/report.png"
