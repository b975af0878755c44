#!/usr/bin/env bash
# Configures and builds the exporter (and its tests) into build/.
# Usage: scripts/build.sh [extra cmake args...]   (BUILD_DIR overrides build/,
# BUILD_TARGET builds one target instead of all)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${BUILD_TARGET:-all}"
echo "built: $BUILD_DIR/exporter/llm_stream_exporter"
