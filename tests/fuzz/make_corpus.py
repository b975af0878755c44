#!/usr/bin/env python3
"""Writes the in-tree seed corpora of tests/fuzz/corpus/<target>/, with the
reproducers of fixed findings that are made, not found (finding-*).

    python3 tests/fuzz/make_corpus.py

Deterministic: the same files every time, so a rerun shows up in git only
when this script or the recordings it reads changed. Seeds are small (the
whole set is a few hundred KiB) and each starts with the target's control
byte where it has one (tests/fuzz/README.md). Needs only the standard
library; brotli comes from the system's libbrotlienc through ctypes (the
seeds using it are skipped with a warning when it is missing).

config_fuzz also reads tests/data/config/ and rows_fuzz tests/data/rows/
directly (fuzz_all.sh passes them as seed directories), so only what those
lack is written here; sse_api_fuzz's seeds are made by fuzz_all.sh from
tests/fixtures/sse/.
"""
import ctypes
import ctypes.util
import gzip
import json
import os
import shutil
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "sse")
CORPUS = os.path.join(HERE, "corpus")


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def reset(target):
    d = os.path.join(CORPUS, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(d, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- compression ---------------------------------------------------------------

def gz(data, level=9):
    # mtime 0: the same bytes every run.
    return gzip.compress(data, compresslevel=level, mtime=0)


def zlib_deflate(data):
    return zlib.compress(data, 9)


def raw_deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


_brotli = None


def br(data, quality=11, lgwin=22):
    global _brotli
    if _brotli is None:
        path = ctypes.util.find_library("brotlienc") or "libbrotlienc.so.1"
        try:
            _brotli = ctypes.CDLL(path)
        except OSError:
            _brotli = False
    if not _brotli:
        return None
    out_size = ctypes.c_size_t(len(data) + 1024 + len(data) // 2)
    out = ctypes.create_string_buffer(out_size.value)
    ok = _brotli.BrotliEncoderCompress(
        ctypes.c_int(quality), ctypes.c_int(lgwin), ctypes.c_int(0), ctypes.c_size_t(len(data)),
        ctypes.c_char_p(data), ctypes.byref(out_size), out)
    if not ok:
        raise RuntimeError("BrotliEncoderCompress failed")
    return out.raw[:out_size.value]


def chunked(data, sizes=(7, 100, 3, 4096), ext=False):
    out, i, k = b"", 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        piece = data[i:i + n]
        out += b"%x%s\r\n" % (len(piece), b";ext=1" if ext and k == 0 else b"") + piece + b"\r\n"
        i += n
        k += 1
    return out + b"0\r\n\r\n"


# --- http_response_fuzz ----------------------------------------------------------
# Control byte: bits 0-2 read size (1, 2, 7, 64, 512, 4096, 16384, 65536),
# bits 3-4 coding (0 header, 1 gzip, 2 br, 3 deflate), bit 5 NDJSON, bit 6
# limit 64 bytes.

READ_1, READ_7, READ_64, READ_512, READ_4K, READ_64K = 0, 2, 3, 4, 5, 7
CAP_1MIB, CAP_4KIB = 2 << 3, 3 << 3
NDJSON = 32
SMALL_LIMIT = 64


def head(status="200 OK", headers=(), version="1.1"):
    lines = ["HTTP/%s %s" % (version, status)] + ["%s: %s" % h for h in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def sse_type(ndjson):
    return ("Content-Type", "application/x-ndjson" if ndjson else "text/event-stream")


def responses():
    d = reset("http_response_fuzz")
    streams = [
        ("openai-chat-usage.sse", False),
        ("anthropic-messages.sse", False),
        ("gemini-crlf.sse", False),
        ("openai-responses-text.sse", False),
        ("replicate-comments-multiline-data.sse", False),
        ("openrouter-error-in-stream.sse", False),
        ("ollama-api-chat.ndjson", True),
        ("ollama-api-generate.ndjson", True),
    ]
    for i, (name, nd) in enumerate(streams):
        body = fixture(name)
        base = os.path.splitext(name)[0]
        flag = NDJSON if nd else 0
        ct = sse_type(nd)
        reads = [READ_64K, READ_7, READ_512, READ_1, READ_4K, READ_64][i % 6]
        write(d, "%s-length" % base, bytes([flag | reads]) +
              head(headers=[ct, ("Content-Length", len(body))]) + body)
        write(d, "%s-chunked" % base, bytes([flag | READ_64]) +
              head(headers=[ct, ("Transfer-Encoding", "chunked")]) + chunked(body, ext=i == 0))
        z = gz(body)
        write(d, "%s-gzip-chunked" % base, bytes([flag | READ_512]) +
              head(headers=[ct, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]) +
              chunked(z, sizes=(13, 1000)))
        if i % 2 == 0:
            write(d, "%s-deflate-close" % base, bytes([flag | READ_4K]) +
                  head(headers=[ct, ("Content-Encoding", "deflate"), ("Connection", "close")]) +
                  zlib_deflate(body))
        else:
            b = br(body)
            if b is not None:
                write(d, "%s-br-length" % base, bytes([flag | READ_7]) +
                      head(headers=[ct, ("Content-Encoding", "br"), ("Content-Length", len(b))]) + b)

    body = fixture("openai-chat-finish-length.sse")
    ct = sse_type(False)
    # Codings and framings the client handles besides the common ones.
    write(d, "raw-deflate", bytes([READ_64K]) +
          head(headers=[ct, ("Content-Encoding", "deflate"), ("Content-Length", len(raw_deflate(body)))]) +
          raw_deflate(body))
    write(d, "x-gzip", bytes([READ_64]) +
          head(headers=[ct, ("Content-Encoding", "x-gzip"), ("Content-Length", len(gz(body)))]) + gz(body))
    write(d, "transfer-gzip-chunked", bytes([READ_512]) +
          head(headers=[ct, ("Transfer-Encoding", "gzip, chunked")]) + chunked(gz(body)))
    write(d, "transfer-gzip-and-content-gzip", bytes([READ_64]) +
          head(headers=[ct, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "gzip"),
                        ("Transfer-Encoding", "chunked")]) + chunked(gz(gz(body))))
    # The decode cap per read (control bits 3-4): 1 MiB, 4 KiB.
    write(d, "gzip-cap-1mib", bytes([READ_7 | CAP_1MIB]) +
          head(headers=[ct, ("Content-Encoding", "gzip"), ("Content-Length", len(gz(body)))]) + gz(body))
    b = br(body)
    if b is not None:
        write(d, "br-cap-4kib", bytes([READ_64K | CAP_4KIB]) +
              head(headers=[ct, ("Content-Encoding", "br"), ("Content-Length", len(b))]) + b)
    write(d, "http10-close-delimited", bytes([READ_512]) +
          head(version="1.0", headers=[ct]) + body)
    write(d, "interim-100-103", bytes([READ_7]) + head("100 Continue") +
          head("103 Early Hints", [("Link", "</style.css>; rel=preload")]) +
          head(headers=[ct, ("Content-Length", len(body))]) + body)
    write(d, "switching-101", bytes([READ_64K]) +
          head("101 Switching Protocols", [("Upgrade", "websocket"), ("Connection", "Upgrade")]) +
          b"\x81\x05hello")
    err = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit"}}).encode()
    write(d, "429-retry-after", bytes([READ_64K]) +
          head("429 Too Many Requests", [("Content-Type", "application/json"),
                                         ("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
                                         ("Content-Length", len(err))]) + err)
    html = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
    write(d, "502-html-gzip", bytes([READ_64]) +
          head("502 Bad Gateway", [("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                                   ("Content-Length", len(gz(html)))]) + gz(html))
    # Framing the client refuses, and broken bodies.
    write(d, "length-and-chunked", bytes([READ_64K]) +
          head(headers=[ct, ("Content-Length", "10"), ("Transfer-Encoding", "chunked")]) + chunked(body))
    write(d, "coding-after-chunked", bytes([READ_64K]) +
          head(headers=[ct, ("Transfer-Encoding", "chunked, gzip")]) + chunked(body))
    write(d, "bad-chunk-size", bytes([READ_64]) +
          head(headers=[ct, ("Transfer-Encoding", "chunked")]) + b"zz\r\ndata: x\r\n\r\n0\r\n\r\n")
    write(d, "truncated-gzip", bytes([READ_7]) +
          head(headers=[ct, ("Content-Encoding", "gzip"), ("Connection", "close")]) + gz(body)[:-40])
    corrupt = bytearray(gz(body))
    corrupt[len(corrupt) // 2] ^= 0xFF
    write(d, "corrupt-gzip", bytes([READ_512]) +
          head(headers=[ct, ("Content-Encoding", "gzip"), ("Content-Length", len(corrupt))]) + bytes(corrupt))
    write(d, "unknown-encoding", bytes([READ_64K]) +
          head(headers=[ct, ("Content-Encoding", "zstd"), ("Content-Length", "3")]) + b"abc")
    write(d, "obs-fold-and-long-header", bytes([READ_64]) +
          b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Folded: a\r\n  b\r\nX-Long: " +
          b"x" * 3000 + b"\r\nContent-Length: 6\r\n\r\ndata:\n")
    # A legitimate high ratio (one deflate layer: ~1000:1): decoded whole.
    zeros = gz(b"data: " + b"0" * (8 << 20) + b"\n\n")
    write(d, "gzip-8mib-event", bytes([READ_64K | SMALL_LIMIT]) +
          head(headers=[ct, ("Content-Encoding", "gzip"), ("Content-Length", len(zeros))]) + zeros)

    # Reproducers of fixed findings (README "Findings"), kept as seeds.
    f = d
    bomb = br(b"\0" * (256 << 20), quality=11, lgwin=24)
    if bomb is not None:
        write(f, "finding-brotli-bomb", bytes([READ_64K]) +
              head(headers=[ct, ("Content-Encoding", "br"), ("Content-Length", len(bomb))]) + bomb)
    # Beast 1.74 with body_limit(boost::none): a head that ends a read, then a
    # Content-Length body (read size 1: every read ends somewhere).
    write(f, "finding-body-limit-none", bytes([READ_1]) +
          head(headers=[ct, ("Content-Length", 10)]) + b"data: hi\n\n")
    # A complete head, then the last chunk without its final CRLF: the client
    # takes the head for incomplete (and, with the rest in a later read,
    # dates the head by that read).
    write(f, "finding-head-done-need-more", bytes([READ_64K]) +
          head(headers=[ct, ("Transfer-Encoding", "chunked")]) + b"0\r\n")
    inner = gz(b"\0" * (256 << 20), 9)
    double = gz(inner, 9)
    write(f, "finding-gzip-in-gzip-bomb", bytes([READ_64K]) +
          head(headers=[ct, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "gzip, chunked")]) +
          chunked(double, sizes=(65536,)))


# --- http_request_fuzz -------------------------------------------------------------
# Control byte: bits 0-1 routing (0 default, 1 prefix /lse, 2 telemetry /, 3
# prefix /a/b + telemetry /m), bit 2 lifecycle, bit 3 basic auth, bit 4
# populated RowStore, bit 5 throwing hooks, bit 6 no hooks, bit 7 ready/ok.

PREFIX, TELEMETRY_ROOT, PREFIX_AND_M = 1, 2, 3
LIFECYCLE, AUTH, ROWS, THROWING, NO_HOOKS, OK = 4, 8, 16, 32, 64, 128
GOOD_AUTH = "Basic dXNlcjpwYXNz"  # user:pass


def request(method, target, headers=(), body=b"", version="1.1"):
    lines = ["%s %s HTTP/%s" % (method, target, version), "Host: exporter:9687"]
    lines += ["%s: %s" % h for h in headers]
    if body:
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def requests():
    d = reset("http_request_fuzz")
    gzip_ae = ("Accept-Encoding", "gzip, deflate")
    auth = ("Authorization", GOOD_AUTH)
    routes = [
        ("metrics", "GET", "/metrics", [gzip_ae]),
        ("metrics-openmetrics", "GET", "/metrics",
         [("Accept", "application/openmetrics-text; version=1.0.0; q=0.9, text/plain;q=0.5")]),
        ("landing", "GET", "/", [gzip_ae]),
        ("healthy", "GET", "/-/healthy", []),
        ("ready", "GET", "/-/ready", []),
        ("reload", "POST", "/-/reload", []),
        ("config", "GET", "/config", []),
        ("probes", "GET", "/api/v1/probes?limit=2&target=svc", [gzip_ae]),
        ("probes-by-id", "GET", "/api/v1/probes?id=p-ok-1", []),
        ("probes-bad-limit", "GET", "/api/v1/probes?limit=0x10", []),
        ("probe-page", "GET", "/probe?id=p-ok-1", [gzip_ae]),
        ("probe-page-failed", "GET", "/probe?id=p-fail-2", []),
        ("probe-missing", "GET", "/probe?id=%3Cscript%3E%FF+x", []),
        ("head-landing", "HEAD", "/", []),
        ("head-metrics-gzip", "HEAD", "/metrics", [gzip_ae]),
        ("post-metrics-405", "POST", "/metrics", []),
        ("get-reload-405", "GET", "/-/reload", []),
        ("absolute-form", "GET", "http://exporter:9687/-/ready?verbose=1", []),
        ("not-found", "GET", "/nothing/here", []),
    ]
    for name, method, target, headers in routes:
        write(d, name, bytes([ROWS | LIFECYCLE | OK]) + request(method, target, headers))
    # With basic auth required: with and without the right Authorization.
    write(d, "auth-good-metrics", bytes([AUTH | ROWS]) + request("GET", "/metrics", [auth, gzip_ae]))
    write(d, "auth-missing-probes", bytes([AUTH | ROWS]) + request("GET", "/api/v1/probes"))
    write(d, "auth-wrong", bytes([AUTH]) +
          request("GET", "/", [("Authorization", "Basic dXNlcjp3cm9uZw==")]))
    # Routing variants.
    write(d, "prefix-redirect", bytes([PREFIX | ROWS]) + request("GET", "/lse"))
    write(d, "prefix-probes", bytes([PREFIX | ROWS]) + request("GET", "/lse/api/v1/probes?id=p3"))
    write(d, "telemetry-root", bytes([TELEMETRY_ROOT]) + request("GET", "/", [gzip_ae]))
    write(d, "prefix-and-m", bytes([PREFIX_AND_M | LIFECYCLE]) +
          request("GET", "/a/b/m") + request("POST", "/a/b/-/reload"))
    # Hooks that throw, and none at all.
    write(d, "throwing-hooks", bytes([THROWING | LIFECYCLE]) +
          request("GET", "/metrics") + request("POST", "/-/reload") + request("GET", "/"))
    write(d, "no-hooks", bytes([NO_HOOKS | LIFECYCLE]) +
          request("GET", "/config") + request("POST", "/-/reload") + request("GET", "/-/ready"))
    # Connection handling: pipelining, HTTP/1.0, close, bodies.
    write(d, "pipelined-keepalive", bytes([ROWS | OK]) +
          b"".join(request("GET", t) for t in ["/-/healthy", "/metrics", "/api/v1/probes", "/config"]))
    write(d, "http10", bytes([OK]) + request("GET", "/-/ready", version="1.0") +
          request("GET", "/-/healthy", version="1.0"))
    write(d, "http10-keepalive", bytes([OK]) +
          request("GET", "/-/ready", [("Connection", "keep-alive")], version="1.0") +
          request("GET", "/metrics", version="1.0"))
    write(d, "connection-close", bytes([OK]) +
          request("GET", "/-/healthy", [("Connection", "close")]) + request("GET", "/-/ready"))
    write(d, "reload-with-body", bytes([LIFECYCLE | OK]) +
          request("POST", "/-/reload", [("Content-Type", "text/plain")], b"please"))
    write(d, "reload-chunked-body", bytes([LIFECYCLE]) +
          b"POST /-/reload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"5\r\nhello\r\n0\r\n\r\nGET /-/healthy HTTP/1.1\r\n\r\n")
    write(d, "header-too-large", bytes([0]) +
          request("GET", "/metrics", [("X-Big", "a" * 9000)]))
    write(d, "body-too-large", bytes([LIFECYCLE]) +
          b"POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n" + b"x" * 200)
    write(d, "bad-request-line", bytes([0]) + b"GET /metrics HTTP/9.9\r\n\r\n")
    write(d, "partial", bytes([0]) + b"GET /metrics HTTP/1.1\r\nHost: ex")


# --- rows_fuzz ---------------------------------------------------------------------

def rows():
    d = reset("rows_fuzz")
    # Reproducers of fixed findings (README "Findings"): a stall detail
    # without at_chunk (read as 0, then refused when written and read again);
    # an unknown failure reason with a line break and a terminal escape.
    write(d, "finding-stall-detail-without-at-chunk",
          '{"ts":1,"target":"t","ok":true,"stalls":1,"stalls_detail":[{"gap_ms":300,"released_chunks":2}]}\n')
    write(d, "finding-error-echoes-line-breaks",
          '{"ts":1,"target":"t","ok":false,"reason":"x\\n\\u001b[31mred"}\n')
    with open(os.path.join(ROOT, "tests", "data", "rows", "host-a.jsonl"), "rb") as f:
        sample = f.read().splitlines()
    write(d, "one-row", sample[0] + b"\n")
    full = {
        "ts": 1796215801.105, "id": "p-1a2b", "target": "svc", "model": "m\u00e9", "prompt": "long",
        "ok": False, "reason": "timeout_idle", "http_status": 200, "ttft_ms": 120.983,
        "duration_ms": 30416.294, "tail_ms": None, "chunks": 16, "stalls": 2,
        "gap_p50_ms": 19.862, "gap_p95_ms": 22.74, "gap_max_ms": 30000.5,
        "phases_ms": {"resolve": 0.5, "connect": 1.25, "tls": 10.0, "request": 0.047,
                      "headers": 0.945, "first_token": 119.992},
        "usage": {"prompt_tokens": 149, "completion_tokens": None},
        "server_ms": {"load": 1.5, "prompt_eval": None, "eval": 300.125},
        "finish_reason": None, "gaps_ms": [20.668, 0.0, 30000.5], "host": "host-a",
        "error": "idle for 30s after chunk 16 \"quoted\" \\ <b>", "content_encoding": "identity",
        "http_version": "1.1", "h2_error": None, "interim_responses": 1, "via_proxy": True,
        "coalesced_chunks": 3,
        "stalls_detail": [{"at_chunk": 4, "gap_ms": 321.729, "released_chunks": 3},
                          {"at_chunk": 9, "gap_ms": 30000.5, "released_chunks": 0}],
    }
    write(d, "every-field", json.dumps(full, ensure_ascii=False) + "\n")
    minimal = {"ts": 1.0, "target": "t", "ok": True}
    write(d, "required-only", json.dumps(minimal) + "\n")
    reasons = ["dns", "resolve", "connect", "tls", "http_4xx", "http_429", "http_5xx", "http_other",
               "empty", "timeout_first_token",
               "timeout_idle", "timeout_total", "truncated", "reset", "protocol", "upstream_error",
               "canceled"]
    write(d, "every-reason", "".join(
        json.dumps({"ts": 1796215801 + i, "target": "t", "ok": False, "reason": r}) + "\n"
        for i, r in enumerate(reasons)))
    write(d, "nulls", json.dumps({"ts": 2.5, "id": None, "target": "t", "model": None, "prompt": None,
                                  "ok": True, "http_status": None, "ttft_ms": None, "duration_ms": None,
                                  "phases_ms": None, "usage": None, "server_ms": None, "gaps_ms": None,
                                  "stalls_detail": None}) + "\n")
    write(d, "crlf-and-blank-lines", b"\r\n  \t\n" + sample[1] + b"\r\n\n" + sample[2] + b"\r\n")
    write(d, "partial-tail", sample[0] + b"\n" + sample[1][:90])
    write(d, "bad-then-good", b"{\"ts\":1,\"target\":\"t\",\"ok\":tru\n" + sample[0] + b"\n")
    write(d, "unknown-keys-and-escapes",
          '{"ts":3,"target":"\\u00e9\\ud83d\\ude00\\n\\t","ok":true,"future_field":{"x":[1,2]},'
          '"model":"\\u0000nul","host":"a\\"b"}\n')
    write(d, "invalid-utf8", b'{"ts":3,"target":"\xff\xfe","ok":true}\n')
    write(d, "big-numbers", '{"ts":1e300,"target":"t","ok":true,"ttft_ms":1.7976931348623157e308,'
          '"duration_ms":-0.0005,"chunks":18446744073709551615,"http_status":9223372036854775807,'
          '"gaps_ms":[1e-300,123456789012345678901234567890]}\n')
    write(d, "wrong-types", '{"ts":"now","target":1,"ok":"yes"}\n{"ts":1,"target":"t","ok":true,'
          '"phases_ms":{"warp":1}}\n{"ts":1,"target":"t","ok":true,"usage":{"prompt_tokens":-1}}\n')
    write(d, "not-objects", "[]\n\"row\"\n42\nnull\n{\n")


# --- config_fuzz: what tests/data/config does not have ------------------------------

def configs():
    d = reset("config_fuzz")
    target = "targets:\n  - name: a\n    url: http://localhost:8000/v1\n    model: m\n"
    write(d, "anchors-and-merge", """\
defaults: &d
  interval: 30s
  headers: {X-Team: probes}
x-base: &base
  url: http://localhost:8000/v1
  model: m
targets:
  - <<: *base
    name: a
  - <<: *base
    name: b
    headers: *d
""")
    write(d, "flow-style", '{targets: [{name: a, url: "http://h:1/v1", model: m, api: gemini, '
          'count: [content, tool_calls], accept_encoding: [gzip, br]}], prompts: {p: {text: hi}}}\n')
    write(d, "tags-and-scalars", target + "    body: {a: !!str 1, b: !!binary aGk=, c: 0x1f, "
          "d: .inf, e: -.nan, f: 1_000, g: 0o17, h: ~, i: 2001-12-14}\n")
    write(d, "block-scalars", "prompts:\n  p:\n    text: |+\n      keep\n\n  q:\n    text: >-\n"
          "      folded\n      text\n" + target)
    write(d, "every-section", """\
listen: "[::1]:9687"
min_interval: 100ms
limits: {prompt_file_bytes: 1KiB, secret_file_bytes: 100}
web: {max_connections: 8, max_connections_per_address: 2, header_timeout: 1s, idle_timeout: 5s,
      write_timeout: 10s}
rows: {path: rows/r.jsonl, max_size: 1MiB, keep: 0, ring: 1}
metrics: {phases: off, per_prompt: true, max_series: 100000,
          buckets: {gap: [0.05, 0.25, 1], ttft: [0.5, 1, 2]}}
diagnosis: {min_probes: 1, burst_chunks: 2}
prompts:
  p: {file: files/prompt.txt}
targets:
  - name: a
    url: https://user:pw@api.example.com:8443/v1?api-version=2024&key=abc
    model: m
    interval: 200ms
    auth: {header: api-key, file: files/header-token.txt}
    headers: {X-Api-Key2: literal, X-Echo: sk-file-secret-7f3a9c}
    labels: {team: "true", n: "1"}
    body: {api_key: x, nested: {token: y, max_tokens: 5}, echo: s3cr3t-from-env}
  - name: b
    url: http://localhost:1
    model: "null"
    api: ollama-chat
    auth: {bearer_token_env: LSE_TEST_SECRET}
    tls: {ca_file: files/ca.pem, insecure_skip_verify: true}
""")
    write(d, "device-files", "prompts:\n  z: {file: /dev/zero}\n  n: {file: /dev/null}\n" + target +
          "    auth: {bearer_token_file: /dev/stdin}\n")
    write(d, "deep-nesting", target + "    body: " + "[" * 300 + "]" * 300 + "\n")
    write(d, "alias-blowup", "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
          "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n" + target)
    write(d, "bom-crlf-tabs", b"\xef\xbb\xbftargets:\r\n  - name: a\r\n    url: http://h/v1\r\n"
          b"    model: m\r\n\tinterval: 1m\r\n")
    write(d, "strings-that-need-quotes", "prompts:\n  p: {text: \"- \"}\n" + target.replace(
        "model: m", "model: \"yes\"") + "    labels: {a: \"1e3\", b: \"~\", c: \"-\", d: \".5\", e: "
          "\"@x\", f: \"a: b\", g: \"#c\", h: \"'q'\", i: \"\\t\", j: \"\\u00e9\", k: \"\\x85\"}\n")
    write(d, "typos", "target:\n  - nmae: a\n    ulr: x\n    modle: m\n    intervall: 1s\n")
    write(d, "multi-doc", target + "---\n" + target)


# --- h2_session_fuzz: a server's side of an HTTP/2 connection ---------------
# Control byte (h2_session_fuzz.cpp): bits 0-2 read size (0: 1 byte, 2: 9,
# 4: 512, 7: 64 KiB), bits 3-4 request body (2: 70000 bytes), bit 5 small
# windows, bit 6 take DATA every other read, bit 7 write in halves.
H2_READ_1, H2_READ_9, H2_READ_512, H2_READ_64K = 0, 2, 4, 7
H2_BIG_BODY, H2_SMALL, H2_LAZY, H2_HALVES = 2 << 3, 32, 64, 128


def h2_frame(ftype, flags, stream, payload=b""):
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags]) +
            stream.to_bytes(4, "big") + payload)


def h2_literal(name, value):
    """HPACK literal field without indexing, new name, no Huffman (< 127 bytes each)."""
    name, value = name.encode(), value.encode()
    return bytes([0, len(name)]) + name + bytes([len(value)]) + value


def h2_settings(*pairs):
    return h2_frame(4, 0, 0, b"".join(k.to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in pairs))


H2_PREFACE = h2_settings((3, 100)) + h2_frame(4, 1, 0)  # SETTINGS, ACK of ours


def h2_head(stream, status="200", fields=(("content-type", "text/event-stream"),), end=False):
    block = h2_literal(":status", status) if status != "200" else b"\x88"
    block += b"".join(h2_literal(n, v) for n, v in fields)
    return h2_frame(1, 4 | (1 if end else 0), stream, block)


def h2_data(stream, payload, end=False, pad=0):
    if pad:
        return h2_frame(0, 8 | (1 if end else 0), stream, bytes([pad]) + payload + b"\0" * pad)
    return h2_frame(0, 1 if end else 0, stream, payload)


def h2_rst(stream, code):
    return h2_frame(3, 0, stream, code.to_bytes(4, "big"))


def h2_goaway(last, code, debug=b""):
    return h2_frame(7, 0, 0, last.to_bytes(4, "big") + code.to_bytes(4, "big") + debug)


def h2_window(stream, increment):
    return h2_frame(8, 0, stream, increment.to_bytes(4, "big"))


def h2_sessions():
    d = reset("h2_session_fuzz")
    sse = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
    answer = h2_head(1) + h2_data(1, sse) + h2_data(1, b"data: [DONE]\n\n", end=True)
    write(d, "sse-two-frames", bytes([H2_READ_9]) + H2_PREFACE + answer)
    write(d, "sse-one-byte-reads", bytes([H2_READ_1 | H2_HALVES]) + H2_PREFACE + answer)
    write(d, "rst-mid-body", bytes([H2_READ_512]) + H2_PREFACE + h2_head(1) + h2_data(1, sse) +
          h2_rst(1, 2))
    write(d, "goaway-unprocessed", bytes([H2_READ_64K]) + H2_PREFACE + h2_goaway(0, 0, b"bye"))
    write(d, "goaway-after-answer", bytes([H2_READ_9]) + H2_PREFACE + answer + h2_goaway(1, 0))
    write(d, "goaway-error-mid-body", bytes([H2_READ_9]) + H2_PREFACE + h2_head(1) +
          h2_data(1, sse) + h2_goaway(1, 11) + h2_data(1, sse, end=True))
    write(d, "zero-window-then-updates", bytes([H2_READ_9 | H2_BIG_BODY]) +
          h2_settings((4, 0), (5, 16384)) + h2_frame(4, 1, 0) +
          h2_frame(6, 0, 0, b"12345678") + h2_window(1, 100) + h2_window(0, 100000) +
          h2_window(1, 70000) + answer)
    write(d, "small-window-lazy-reader", bytes([H2_READ_512 | H2_SMALL | H2_LAZY]) + H2_PREFACE +
          h2_head(1) + b"".join(h2_data(1, b"x" * 16000) for _ in range(6)) +
          h2_data(1, b"", end=True))
    write(d, "interim-and-trailers", bytes([H2_READ_9]) + H2_PREFACE +
          h2_head(1, "103", (("link", "</a>; rel=preload"),)) + h2_head(1) + h2_data(1, sse) +
          h2_frame(1, 5, 1, h2_literal("x-usage", "12")))
    block = b"\x88" + h2_literal("content-type", "text/event-stream") + h2_literal("x-a", "b")
    write(d, "continuation-and-padding", bytes([H2_READ_64K]) + H2_PREFACE +
          h2_frame(1, 0, 1, block[:5]) + h2_frame(9, 4, 1, block[5:]) +
          h2_data(1, sse, pad=7) + h2_data(1, b"", end=True, pad=3))
    write(d, "two-streams", bytes([H2_READ_64K]) + H2_PREFACE + answer +
          h2_head(3) + h2_data(3, sse, end=True))
    write(d, "content-length-mismatch", bytes([H2_READ_64K]) + H2_PREFACE +
          h2_head(1, fields=(("content-length", "3"),)) + h2_data(1, sse, end=True))
    write(d, "header-list-over-limit", bytes([H2_READ_64K | H2_SMALL]) + H2_PREFACE +
          h2_head(1, fields=(("x-big", "v" * 120), ("x-big2", "w" * 120))) + h2_data(1, sse, True))
    write(d, "http1-answer", bytes([H2_READ_64K]) +
          b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
    write(d, "data-on-stream-0", bytes([H2_READ_9]) + H2_PREFACE + h2_data(0, b"zz"))
    # Found: ":status 051" passes nghttp2's three-digit check and was kept as a final head.
    write(d, "finding-status-051", bytes([H2_READ_9]) + H2_PREFACE +
          h2_head(1, "051", (("link", "</a>; rel=preload"),)) + h2_data(1, sse, end=True))


def main():
    responses()
    h2_sessions()
    requests()
    rows()
    configs()
    total = 0
    for t in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, t))
        size = sum(os.path.getsize(os.path.join(CORPUS, t, f)) for f in files)
        total += size
        print("%-20s %3d seeds %8d bytes" % (t, len(files), size))
    print("total %d bytes" % total)
    if br(b"x") is None:
        print("warning: libbrotlienc not found; brotli seeds skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
