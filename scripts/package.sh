#!/usr/bin/env bash
# Builds the Debian package and checks it (docs/deploy.md, "Debian package and
# systemd"): a Release build of the exporter alone in build-package/ with
# Debian's hardening flags (dpkg-buildflags, hardening=+all), `cpack -G DEB`
# (cmake/Packaging.cmake), then tests/deploy/check_deb.py: lintian, the unit
# through systemd-analyze, the packaged binary serving the demo config.
# The package lands in build/llm-stream-exporter_<version>_amd64.deb.
# Usage: scripts/package.sh [extra cmake args...]
#   PACKAGE_BUILD_DIR overrides build-package/, PACKAGE_OUT overrides build/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${PACKAGE_BUILD_DIR:-build-package}
OUT=${PACKAGE_OUT:-build}

export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cxxflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DLSE_BUILD_TESTS=OFF \
  -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target llm_stream_exporter

mkdir -p "$OUT"
revision=()
if rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then revision=(--revision "$rev"); fi
python3 tests/deploy/check_deb.py --build-dir "$BUILD_DIR" --out "$OUT" "${revision[@]}"
