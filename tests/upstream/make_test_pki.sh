#!/usr/bin/env bash
# Makes the test PKI used by the TLS tests and the demo, with the openssl CLI.
#
#   make_test_pki.sh OUTDIR
#
# OUTDIR gets:
#   ca.crt ca.key               test CA
#   server.crt server.key       CN=localhost, SAN DNS:localhost, IP:127.0.0.1, IP:::1; signed by ca
#   client.crt client.key       CN=llm-stream-exporter-test-client (clientAuth); signed by ca
#   other-ca.crt other-ca.key   an unrelated CA, for "wrong CA" tests
#   server-chain.crt            server.crt followed by ca.crt
#
# Idempotent: when every file is there and the leaf certificates are valid for
# another day and still verify against ca.crt, nothing is done. Prints nothing
# on success; on failure prints openssl's output and exits non-zero. Concurrent
# runs on the same OUTDIR are serialised with flock when it is available.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
mkdir -p "$out"
cd "$out"

if command -v flock >/dev/null 2>&1; then
  exec 9>".pki.lock"
  flock 9
fi

files=(ca.crt ca.key server.crt server.key client.crt client.key other-ca.crt other-ca.key server-chain.crt)

complete() {
  local f
  for f in "${files[@]}"; do [ -s "$f" ] || return 1; done
  openssl x509 -in server.crt -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl x509 -in client.crt -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl verify -CAfile ca.crt server.crt client.crt >/dev/null 2>&1 || return 1
}
if complete; then
  exit 0
fi

work=$(mktemp -d ".pki.XXXXXX")
log="$work/openssl.log"
trap 'rm -rf "$work"' EXIT
run() {
  if ! "$@" >>"$log" 2>&1; then
    echo "make_test_pki: failed: $*" >&2
    cat "$log" >&2
    exit 1
  fi
}

days=3650
ca() {  # ca NAME CN
  run openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$work/$1.key" -out "$work/$1.crt" -days "$days" -subj "/O=llm-stream-exporter tests/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash"
}
leaf() {  # leaf NAME CN EXTENSIONS
  run openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$work/$1.key" -out "$work/$1.csr" -subj "/O=llm-stream-exporter tests/CN=$2"
  printf '%s\n' "$3" >"$work/$1.ext"
  run openssl x509 -req -in "$work/$1.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 -extfile "$work/$1.ext" -out "$work/$1.crt"
}

ca ca "llm-stream-exporter test CA"
ca other-ca "llm-stream-exporter unrelated test CA"
leaf server localhost "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer"
leaf client llm-stream-exporter-test-client "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer"
cat "$work/server.crt" "$work/ca.crt" >"$work/server-chain.crt"
# Test-only keys: readable, so a demo container running as another user can use them.
chmod 644 "$work"/*.key "$work"/*.crt

# Rename into place (same file system), keys before the certificates that need them.
for f in ca.key ca.crt other-ca.key other-ca.crt server.key server.crt client.key client.crt server-chain.crt; do
  mv -f "$work/$f" "$f"
done
