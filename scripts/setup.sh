#!/usr/bin/env bash
# Installs every build, test and demo dependency from Debian's archive.
# Idempotent: packages already present are skipped by apt-get.
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake pkg-config git ca-certificates openssl
  libboost-dev libboost-system-dev libssl-dev zlib1g-dev libbrotli-dev libc-ares-dev libnghttp2-dev
  libsimdjson-dev libyaml-cpp-dev prometheus-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
)
TEST_PKGS=(
  lintian systemd init-system-helpers python3-seccomp   # the .deb check (tests/deploy/check_deb.py)
  clang-format clang-tidy universal-ctags apache2-utils
  clang-14 libclang-rt-14-dev
  python3 python3-yaml python3-jsonschema python3-protobuf curl procps  # python3-protobuf: the OTLP receiver of tests/integration/test_otlp.py
  python3-h2 nghttp2-proxy nghttp2-client  # HTTP/2: the scripted h2 server and nghttpx of tests/integration/test_http2.py, the bench's h2 column
  nginx-light prometheus prometheus-alertmanager haproxy squid logrotate iproute2
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev
  chromium
  buildah debootstrap
)

# Profiles: build (compile only), demo (compile + run the demo), all (default: tests too).
want=("${BUILD_PKGS[@]}")
case "${1:-all}" in
  "build") ;;
  "demo") want+=(python3 curl) ;;
  "all")
    want+=("${TEST_PKGS[@]}")
    # The Dockerfile linter and the chart README generator come from the npm
    # registry (tests/deploy/dockerlint, tests/deploy/readmegen); use the machine's
    # Node.js when it has one, Debian's otherwise.
    command -v npm >/dev/null 2>&1 || want+=(nodejs npm)
    ;;
  *) echo "usage: scripts/setup.sh [build|demo|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#want[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx/prometheus packages try to start services; tests start their own copies.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
