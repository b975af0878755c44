#!/usr/bin/env python3
"""Scriptable OpenAI-compatible streaming upstream for tests and demos.

Python 3.11 standard library only. It answers like an OpenAI-compatible LLM
server that streams its answer as Server-Sent Events, with timing and faults
scripted by the URL, so the exporter's clock (DESIGN.md section 2) can be
checked against a known schedule.

Usage:
  upstream.py --port 0 --port-file F [--host 127.0.0.1] [--log-file L.jsonl]
              [--tls-cert C --tls-key K [--tls-client-ca CA]] [--quiet]

  Binds (port 0 = a free port), writes the real port to --port-file atomically
  (write a temporary file, then rename) once listening, and serves until SIGTERM
  or SIGINT, then exits 0 within a second (removing the port file).

Endpoints:
  POST {prefix}/v1/chat/completions   chat.completion.chunk events
  POST {prefix}/v1/completions        text_completion events
  GET  {prefix}/v1/models             one model, for clients that look first
  GET  /healthz                       200 "ok"
  GET  /                              this text
  ("/v1" may be left out: {prefix}/chat/completions works too.)

  {prefix} is empty (the default script: ttft 120 ms, 40 chunks, gap 25 ms
  +/- 5 ms jitter) or /s/<spec>, where <spec> is comma-separated key=value
  pairs, e.g. base URL
      http://127.0.0.1:PORT/s/ttft=150,gap=20,chunks=30,stall=10:300;20:400/v1
  Keys a spec leaves out keep the default script, except jitter, which is 0.
  Values may be percent-encoded (a comma in a value is %2C). Unknown keys, bad
  values and repeated keys are answered 400 with a message saying why.

Spec keys (times in milliseconds, fractions allowed):
  ttft=MS           request fully read -> first content chunk (includes headers_delay)
  gap=MS            between content chunks
  jitter=MS         each gap is gap +/- uniform(jitter) (not stalls, not ttft)
  chunks=N          number of content chunks (default 40)
  stall=I:MS;I:MS   the gap BEFORE content chunk I (0-based, 1 <= I < chunks) is MS
  seed=N            seed for jitter (default: random)
  role_first=1      a role-only delta {"role":"assistant","content":""} right after headers
  reasoning=N       the first N chunks carry delta.reasoning_content instead of content
  finish=stop|length  finish_reason of the finish event (default stop)
  usage=0|1         force the usage event off/on (default: stream_options.include_usage)
  tail=MS           last content chunk -> end (finish event, usage, [DONE], end of body)
  keepalive=MS      ": keep-alive" comment every MS (grid from the headers) while waiting
  per_write=N       N content events per socket write, sent at the time of the last of them
  split=1           every write is split in two, inside the JSON of its last event: the
                    first half 1 ms before the scheduled time, the second at it
  crlf=1            CRLF line endings in the SSE stream
  framing=chunked|close  Transfer-Encoding: chunked (default), or close-delimited body
  content_type=STR  Content-Type of the stream (default text/event-stream)
  headers_delay=MS  request -> response headers; ttft still counts from the request,
                    so ttft includes it (if headers_delay > ttft, the first chunk
                    follows the headers at once)
  status=CODE       answer CODE with an OpenAI-style JSON error body instead of
                    streaming (429 carries Retry-After: 1); sent after headers_delay
  reject_stream_options=1  400 "Unrecognized request argument supplied: stream_options"
                    if the request body has stream_options; else stream normally
  no_answer=1       read the request, never send anything, wait for the client to leave
  close_after=N     after N content chunks close the connection (FIN, no end marker,
                    no terminating HTTP chunk) at the time chunk N was due (or at the
                    end time when N >= chunks)
  hang_after=N      after N content chunks send nothing more (not even keep-alives) and
                    keep the connection open until the client leaves
  error_after=N     at the time chunk N was due, send
                    data: {"error":{"message":"upstream overloaded","type":"server_error"}}
                    and end the body (no [DONE]); the connection stays usable
  bad_json_after=N  send "data: {not json" before content chunk N (in the same write),
                    then go on; N = chunks puts it before the finish event
  no_done=1         end the body without data: [DONE]

  When several of close_after/hang_after/error_after are given, the smallest N wins.
  A request whose JSON has no "stream": true gets one non-streamed JSON answer at
  the time the stream would have ended.

Log file (--log-file): one JSON line per finished response, flushed per line:
  {"path", "spec", "status", "t_request", "sends", "first_byte", "end", "outcome",
   "conn", "seq", "method", "endpoint", "model", "chunks", "reasoning", "peer"}
  t_request: time.monotonic() when the request was fully read; sends: the
  monotonic time each scripted chunk's write completed (reasoning chunks first,
  so content chunks are sends[reasoning:]); first_byte: the response headers'
  write; end: the final write, the close, or the client leaving. time.monotonic()
  is CLOCK_MONOTONIC, the clock of the exporter's std::chrono::steady_clock.
  outcome: done, error_event, closed, hang, no_answer, client_gone, status, rejected.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import http
import itertools
import json
import os
import random
import signal
import socket
import ssl
import sys
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import unquote

SERVER_NAME = "llm-stream-upstream/1"
DEFAULT_MODEL = "upstream-test-model"
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024
# The event loop wakes up to ~1 ms late (epoll timeouts are whole milliseconds),
# so it is asked to wake this much early and the rest is slept precisely.
PRECISE_MARGIN_S = 0.0015
SPLIT_LEAD_S = 0.001

# Chunk i carries WORDS[i % len(WORDS)]: a reader reassembles readable text.
WORDS = (
    "Streaming answers arrive chunk by chunk, and users feel the pauses between "
    "them more than the averages. This upstream sends short words on a scripted "
    "clock so that every gap, stall and tail can be checked against its schedule."
).split()

ERROR_BODIES = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided: sk-test***. You can find your API key at "
          "https://platform.openai.com/account/api-keys.", "invalid_request_error",
          "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error",
          "model_not_allowed"),
    404: ("The model does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests. Please try again in 1s.", "requests",
          "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.",
          "server_error", None),
    504: ("Gateway timeout.", "server_error", None),
}


# --------------------------------------------------------------------------- spec


class SpecError(ValueError):
    """A /s/<spec> that cannot be followed; answered 400 with this message."""


@dataclass
class Script:
    ttft: float = 120.0
    gap: float = 25.0
    jitter: float = 0.0
    chunks: int = 40
    stall: dict = field(default_factory=dict)
    seed: int | None = None
    role_first: bool = False
    reasoning: int = 0
    finish: str = "stop"
    usage: bool | None = None
    tail: float = 0.0
    keepalive: float | None = None
    per_write: int = 1
    split: bool = False
    crlf: bool = False
    framing: str = "chunked"
    content_type: str = "text/event-stream"
    headers_delay: float = 0.0
    status: int | None = None
    reject_stream_options: bool = False
    no_answer: bool = False
    close_after: int | None = None
    hang_after: int | None = None
    error_after: int | None = None
    bad_json_after: int | None = None
    no_done: bool = False

    def content_offsets(self, rng: random.Random) -> list[float]:
        """Seconds from request-received to each content chunk's scheduled send."""
        offsets, t = [], self.ttft
        for i in range(self.chunks):
            if i > 0:
                if i in self.stall:
                    g = self.stall[i]
                else:
                    g = self.gap + (rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0)
                t += max(0.0, g)
            offsets.append(t / 1000.0)
        return offsets

    def end_offset(self, offsets: list[float]) -> float:
        last = offsets[-1] if offsets else self.ttft / 1000.0
        return last + self.tail / 1000.0


DEFAULT_SCRIPT = Script(jitter=5.0)
MAX_MS = 3_600_000.0


def _ms(key, v, positive=False):
    try:
        x = float(v)
    except ValueError:
        raise SpecError(f"{key}={v!r}: expected milliseconds, e.g. {key}=150") from None
    if not (0.0 <= x <= MAX_MS) or (positive and x <= 0.0):
        raise SpecError(f"{key}={v!r}: must be {'>' if positive else '>='} 0 and <= {MAX_MS:.0f} ms")
    return x


def _int(key, v, lo=0, hi=1_000_000):
    try:
        x = int(v)
    except ValueError:
        raise SpecError(f"{key}={v!r}: expected an integer") from None
    if not lo <= x <= hi:
        raise SpecError(f"{key}={v!r}: must be between {lo} and {hi}")
    return x


def _flag(key, v):
    if v not in ("0", "1"):
        raise SpecError(f"{key}={v!r}: expected 0 or 1")
    return v == "1"


def _choice(*allowed):
    def parse(key, v):
        if v not in allowed:
            raise SpecError(f"{key}={v!r}: expected one of {'|'.join(allowed)}")
        return v
    return parse


def _stall(key, v):
    out = {}
    for item in filter(None, v.split(";")):
        idx, sep, ms = item.partition(":")
        if not sep:
            raise SpecError(f"stall={v!r}: expected INDEX:MS;INDEX:MS, e.g. stall=10:300;20:400")
        i = _int("stall index", idx, lo=1)
        if i in out:
            raise SpecError(f"stall={v!r}: index {i} given twice")
        out[i] = _ms("stall", ms)
    return out


def _status(key, v):
    return _int(key, v, lo=200, hi=599)


SPEC_KEYS = {
    "ttft": _ms, "gap": _ms, "jitter": _ms, "tail": _ms, "headers_delay": _ms,
    "keepalive": lambda k, v: _ms(k, v, positive=True),
    "chunks": _int, "reasoning": _int, "close_after": _int, "hang_after": _int,
    "error_after": _int, "bad_json_after": _int,
    "per_write": lambda k, v: _int(k, v, lo=1),
    "seed": lambda k, v: _int(k, v, lo=0, hi=2**63),
    "stall": _stall, "status": _status,
    "role_first": _flag, "split": _flag, "crlf": _flag, "no_answer": _flag,
    "no_done": _flag, "reject_stream_options": _flag,
    "usage": _flag,
    "finish": _choice("stop", "length"),
    "framing": _choice("chunked", "close"),
    "content_type": lambda k, v: v,
}


def parse_spec(raw: str | None) -> Script:
    """Parse the raw (still percent-encoded) spec path segment(s)."""
    if raw is None:
        return Script(**DEFAULT_SCRIPT.__dict__)
    script = Script()
    seen = set()
    for item in raw.split(","):
        if not item:
            continue
        k, sep, v = item.partition("=")
        k, v = unquote(k).strip(), unquote(v)
        if not sep:
            raise SpecError(f"{k!r}: expected key=value")
        parser = SPEC_KEYS.get(k)
        if parser is None:
            raise SpecError(f"unknown spec key {k!r}; known keys: {', '.join(sorted(SPEC_KEYS))}")
        if k in seen:
            raise SpecError(f"spec key {k!r} given twice")
        seen.add(k)
        setattr(script, k, parser(k, v))
    if script.status == 200:
        script.status = None
    bad = [i for i in script.stall if i >= script.chunks]
    if bad:
        raise SpecError(f"stall index {bad[0]} is not a chunk: chunks={script.chunks} (indexes 1..{script.chunks - 1})")
    if script.reasoning > script.chunks:
        raise SpecError(f"reasoning={script.reasoning} > chunks={script.chunks}")
    if script.bad_json_after is not None and script.bad_json_after > script.chunks:
        raise SpecError(f"bad_json_after={script.bad_json_after} > chunks={script.chunks}")
    if not script.content_type or any(c in script.content_type for c in "\r\n"):
        raise SpecError("content_type must be a non-empty header value")
    return script


ENDPOINTS = (
    ("/v1/chat/completions", "chat"), ("/chat/completions", "chat"),
    ("/v1/completions", "completions"), ("/completions", "completions"),
    ("/v1/models", "models"), ("/models", "models"),
)


def route(path: str):
    """Return (endpoint, raw spec or None) or None when the path is not ours."""
    for suffix, endpoint in ENDPOINTS:
        if path.endswith(suffix):
            prefix = path[: -len(suffix)]
            if prefix == "":
                return endpoint, None
            if prefix == "/s":
                return endpoint, ""
            if prefix.startswith("/s/"):
                return endpoint, prefix[3:]
            return None
    return None


# --------------------------------------------------------------------------- HTTP


class BadRequest(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class ClientGone(Exception):
    pass


@dataclass
class Request:
    method: str
    target: str
    path: str
    version: str
    headers: dict
    body: bytes
    t_request: float

    def header(self, name, default=""):
        return self.headers.get(name.lower(), default)

    def wants_close(self) -> bool:
        tokens = {t.strip().lower() for t in self.header("connection").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" not in tokens
        return "close" in tokens


async def read_line(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readline()
    except (ValueError, asyncio.LimitOverrunError):
        raise BadRequest(431, "request line or header too long") from None


async def read_request(reader, writer) -> Request | None:
    line = await read_line(reader)
    while line in (b"\r\n", b"\n"):  # tolerate stray blank lines between requests
        line = await read_line(reader)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise ClientGone()
    parts = line.decode("latin-1").strip().split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, f"malformed request line {line[:80]!r}")
    method, target, version = parts
    headers, total = {}, len(line)
    while True:
        line = await read_line(reader)
        if not line.endswith(b"\n"):
            raise ClientGone()
        total += len(line)
        if total > MAX_HEADER_BYTES:
            raise BadRequest(431, "request headers too large")
        if line in (b"\r\n", b"\n"):
            break
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name.strip():
            raise BadRequest(400, f"malformed header line {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "100-continue" in headers.get("expect", "").lower() and version == "HTTP/1.1":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await read_chunked_body(reader)
        elif "content-length" in headers:
            try:
                n = int(headers["content-length"])
            except ValueError:
                raise BadRequest(400, "bad Content-Length") from None
            if n < 0:
                raise BadRequest(400, "bad Content-Length")
            if n > MAX_BODY_BYTES:
                raise BadRequest(413, "request body too large")
            body = await reader.readexactly(n)
        else:
            body = b""
    except asyncio.IncompleteReadError:
        raise ClientGone() from None
    path = target.split("?", 1)[0]
    if path.startswith("http://") or path.startswith("https://"):  # absolute-form
        path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
    return Request(method, target, path, version, headers, body, time.monotonic())


async def read_chunked_body(reader) -> bytes:
    body = bytearray()
    while True:
        line = await read_line(reader)
        if not line:
            raise asyncio.IncompleteReadError(bytes(body), None)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadRequest(400, "bad chunk size in request body") from None
        if size == 0:
            while (await read_line(reader)) not in (b"\r\n", b"\n", b""):
                pass  # trailers are ignored
            return bytes(body)
        if len(body) + size > MAX_BODY_BYTES:
            raise BadRequest(413, "request body too large")
        body += await reader.readexactly(size)
        if (await read_line(reader)) not in (b"\r\n", b"\n"):
            raise BadRequest(400, "chunk data not followed by CRLF")


def response_head(status: int, headers: list[tuple[str, str]], version="HTTP/1.1") -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Status"
    lines = [f"{version} {status} {phrase}", f"Date: {email.utils.formatdate(usegmt=True)}",
             f"Server: {SERVER_NAME}"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def error_json(status: int, message: str | None = None, etype: str | None = None, code=None) -> bytes:
    m, t, c = ERROR_BODIES.get(status, (f"Scripted error status {status}.",
                                        "server_error" if status >= 500 else "invalid_request_error", None))
    return json.dumps({"error": {"message": message or m, "type": etype or t, "param": None,
                                 "code": code if message else c}}).encode() + b"\n"


async def sleep_until(deadline: float) -> None:
    """Sleep until time.monotonic() >= deadline, within ~0.1 ms when the machine is idle."""
    delay = deadline - time.monotonic() - PRECISE_MARGIN_S
    if delay > 0:
        await asyncio.sleep(delay)
    rest = deadline - time.monotonic()
    if rest > 0:
        time.sleep(rest)  # blocks the loop for at most ~PRECISE_MARGIN_S


def estimate_prompt_tokens(body: dict, endpoint: str) -> int:
    text = []
    if endpoint == "chat":
        for m in body.get("messages") or []:
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, str):
                text.append(c)
            elif isinstance(c, list):
                text += [p.get("text", "") for p in c if isinstance(p, dict)]
        overhead = 3 * len(body.get("messages") or []) + 3
    else:
        p = body.get("prompt", "")
        text += p if isinstance(p, list) else [str(p)]
        overhead = 0
    chars = sum(len(t) for t in text if isinstance(t, str))
    return max(1, (chars + 3) // 4 + overhead)


# --------------------------------------------------------------------------- streaming


class Exchange:
    """One request/response on a connection: writes, timing and the log record."""

    def __init__(self, server, conn, req: Request, reader, writer):
        self.server, self.conn, self.req = server, conn, req
        self.reader, self.writer = reader, writer
        self.status = None
        self.first_byte = None
        self.end = None
        self.sends: list[float] = []
        self.outcome = "done"
        self.endpoint = None
        self.spec = None
        self.model = None
        self.chunks = None
        self.reasoning = 0
        self.keep_alive = not req.wants_close()
        self.chunked = False
        self.nl = b"\n"
        self.headers_at = None
        self.keepalive_s = None
        self.ka_k = 1

    # -- low-level writes
    def client_left(self) -> bool:
        # EOF is fed to the reader as soon as it arrives, read or not. An HTTP client
        # does not half-close while it waits for its answer, so EOF means it left.
        return self.reader.at_eof() or self.writer.transport.is_closing()

    async def write_raw(self, data: bytes) -> float:
        if self.client_left():
            raise ClientGone()
        self.writer.write(data)
        await self.writer.drain()
        t = time.monotonic()
        if self.first_byte is None:
            self.first_byte = t
        return t

    def frame(self, payload: bytes, final=False) -> bytes:
        if not self.chunked:
            return payload
        out = b"%x\r\n%s\r\n" % (len(payload), payload) if payload else b""
        return out + (b"0\r\n\r\n" if final else b"")

    async def send_simple(self, status: int, body: bytes, ctype="application/json",
                          extra: list | None = None, at: float | None = None) -> None:
        if at is not None:
            await sleep_until(at)
        self.status = status
        headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
        headers += extra or []
        headers.append(("Connection", "keep-alive" if self.keep_alive else "close"))
        head = response_head(status, headers, "HTTP/1.0" if self.req.version == "HTTP/1.0" else "HTTP/1.1")
        self.end = await self.write_raw(head + (b"" if self.req.method == "HEAD" else body))

    # -- SSE
    def event(self, obj) -> bytes:
        data = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
        return b"data: " + data.encode() + self.nl + self.nl

    async def wait(self, deadline: float, keepalive=True) -> None:
        """Sleep until deadline, sending ': keep-alive' comments on their grid meanwhile."""
        if keepalive and self.keepalive_s and self.headers_at is not None:
            while True:
                nxt = self.headers_at + self.ka_k * self.keepalive_s
                if nxt >= deadline - 0.0005:
                    break
                await self.sleep_watching(nxt)
                self.ka_k += 1
                await self.write_raw(self.frame(b": keep-alive" + self.nl + self.nl))
        await self.sleep_watching(deadline)

    async def sleep_watching(self, deadline: float) -> None:
        """sleep_until(deadline), noticing within ~50 ms when the client leaves."""
        while True:
            if self.client_left():
                raise ClientGone()
            left = deadline - time.monotonic()
            if left <= 0.1:
                break
            await asyncio.sleep(0.05)
        await sleep_until(deadline)

    async def send_events(self, events: list[bytes], deadline: float, split: bool, final=False) -> float:
        """Write events (whole) so that their last byte leaves at deadline."""
        payload = b"".join(events)
        if not split or not payload:
            await self.wait(deadline)
            return await self.write_raw(self.frame(payload, final))
        last = events[-1]
        cut = len(payload) - len(last) + (len(b"data: ") + (len(last) - len(b"data: ")) // 2
                                          if last.startswith(b"data: ") else len(last) // 2)
        cut = min(max(cut, 1), len(payload) - 1)
        await self.wait(deadline - SPLIT_LEAD_S)
        t1 = await self.write_raw(self.frame(payload[:cut]))
        await sleep_until(max(deadline, t1 + SPLIT_LEAD_S))  # no keep-alive inside an event
        return await self.write_raw(self.frame(payload[cut:], final))

    async def stream(self, script: Script, body: dict, endpoint: str) -> None:
        req = self.req
        t0 = req.t_request
        rng = random.Random(script.seed)
        offsets = script.content_offsets(rng)
        self.chunks, self.reasoning = script.chunks, script.reasoning
        self.nl = b"\r\n" if script.crlf else b"\n"
        self.keepalive_s = script.keepalive / 1000.0 if script.keepalive else None
        close_framing = script.framing == "close" or req.version == "HTTP/1.0"
        self.chunked = not close_framing
        if close_framing:
            self.keep_alive = False

        chat = endpoint == "chat"
        cid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        created = int(time.time())
        model = self.model
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(choice_extra: dict | None, finish=None, usage=None) -> bytes:
            d = {"id": cid, "object": obj, "created": created, "model": model}
            if chat:
                d["system_fingerprint"] = "fp_upstream"
            if choice_extra is None:
                d["choices"] = []
            elif chat:
                d["choices"] = [{"index": 0, "delta": choice_extra, "logprobs": None,
                                 "finish_reason": finish}]
            else:
                d["choices"] = [{"text": choice_extra.get("text", ""), "index": 0, "logprobs": None,
                                 "finish_reason": finish, **{k: v for k, v in choice_extra.items() if k != "text"}}]
            if usage is not None:
                d["usage"] = usage
            return self.event(d)

        def content_event(i: int) -> bytes:
            kind_start = 0 if i < script.reasoning else script.reasoning
            word = WORDS[i % len(WORDS)]
            text = word if i == kind_start else " " + word
            if i < script.reasoning:
                return chunk({"content": None, "reasoning_content": text} if chat
                             else {"text": "", "reasoning_content": text})
            return chunk({"content": text} if chat else {"text": text})

        # Response headers.
        await self.wait(t0 + script.headers_delay / 1000.0, keepalive=False)
        headers = [("Content-Type", script.content_type), ("Cache-Control", "no-cache")]
        if self.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        headers += [("Connection", "keep-alive" if self.keep_alive else "close"),
                    ("X-Request-Id", "req_" + uuid.uuid4().hex[:24])]
        self.status = 200
        self.headers_at = await self.write_raw(response_head(200, headers))
        if script.role_first:
            await self.write_raw(self.frame(chunk({"role": "assistant", "content": ""} if chat else {"text": ""})))

        # Content chunks, up to the first fault.
        faults = [(n, kind) for n, kind in ((script.close_after, "close"), (script.hang_after, "hang"),
                                            (script.error_after, "error")) if n is not None]
        fault_n, fault = min(faults) if faults else (None, None)
        n_content = min(script.chunks, fault_n) if fault else script.chunks
        end_at = t0 + script.end_offset(offsets)
        stop_at = t0 + offsets[n_content] if n_content < script.chunks else end_at
        bad = b"data: {not json" + self.nl + self.nl
        group: list[bytes] = []
        in_group = 0
        for i in range(n_content):
            if script.bad_json_after == i:
                group.append(bad)
            group.append(content_event(i))
            in_group += 1
            if in_group == script.per_write or i == n_content - 1:
                t = await self.send_events(group, t0 + offsets[i], script.split)
                self.sends += [t] * in_group
                group, in_group = [], 0
        if script.bad_json_after == n_content:  # after the last chunk sent
            group.append(bad)

        if fault == "close":
            if group:
                await self.send_events(group, stop_at, script.split)
            await self.wait(stop_at)
            self.outcome = "closed"
            self.keep_alive = False
            self.writer.close()
            self.end = time.monotonic()
            return
        if fault == "hang":
            if group:
                await self.send_events(group, stop_at, script.split)
            self.outcome = "hang"
            self.keep_alive = False
            await wait_client_gone(self.reader)
            self.end = time.monotonic()
            return
        if fault == "error":
            group.append(self.event({"error": {"message": "upstream overloaded", "type": "server_error"}}))
            self.end = await self.send_events(group, stop_at, script.split, final=True)
            self.outcome = "error_event"
        else:
            group.append(chunk({} if chat else {"text": ""}, finish=script.finish))
            want_usage = script.usage if script.usage is not None else bool(
                isinstance(body.get("stream_options"), dict) and body["stream_options"].get("include_usage") is True)
            if want_usage:
                pt = estimate_prompt_tokens(body, endpoint)
                group.append(chunk(None, usage={"prompt_tokens": pt, "completion_tokens": script.chunks,
                                                "total_tokens": pt + script.chunks}))
            if not script.no_done:
                group.append(self.event("[DONE]"))
            self.end = await self.send_events(group, end_at, script.split, final=True)
        if close_framing:
            self.writer.close()
            self.end = time.monotonic()

    async def answer_whole(self, script: Script, body: dict, endpoint: str) -> None:
        """A request without "stream": true: one JSON answer when the stream would have ended."""
        offsets = script.content_offsets(random.Random(script.seed))
        self.chunks = script.chunks
        text = " ".join(WORDS[i % len(WORDS)] for i in range(script.reasoning, script.chunks))
        pt = estimate_prompt_tokens(body, endpoint)
        usage = {"prompt_tokens": pt, "completion_tokens": script.chunks, "total_tokens": pt + script.chunks}
        created = int(time.time())
        if endpoint == "chat":
            out = {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion",
                   "created": created, "model": self.model, "system_fingerprint": "fp_upstream",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                "logprobs": None, "finish_reason": script.finish}], "usage": usage}
        else:
            out = {"id": "cmpl-" + uuid.uuid4().hex[:24], "object": "text_completion", "created": created,
                   "model": self.model, "choices": [{"text": text, "index": 0, "logprobs": None,
                                                     "finish_reason": script.finish}], "usage": usage}
        await self.send_simple(200, json.dumps(out).encode() + b"\n",
                               at=self.req.t_request + script.end_offset(offsets))

    # -- dispatch
    async def run(self) -> None:
        req = self.req
        if req.path == "/healthz":
            if req.method not in ("GET", "HEAD"):
                return await self.send_simple(405, error_json(405, "use GET"), extra=[("Allow", "GET, HEAD")])
            return await self.send_simple(200, b"ok\n", "text/plain; charset=utf-8")
        if req.path == "/" and req.method in ("GET", "HEAD"):
            return await self.send_simple(200, __doc__.encode(), "text/plain; charset=utf-8")
        routed = route(req.path)
        if routed is None:
            return await self.send_simple(404, error_json(404, f"no such endpoint {req.path}; try POST "
                                                               "/v1/chat/completions or /s/<spec>/v1/chat/completions",
                                                          "invalid_request_error", "not_found"))
        self.endpoint, self.spec = routed
        if self.spec is not None:
            self.spec = unquote(self.spec)
        try:
            script = parse_spec(routed[1])
        except SpecError as e:
            self.outcome = "rejected"
            return await self.send_simple(400, error_json(400, f"bad upstream spec: {e}",
                                                          "invalid_request_error", "bad_spec"))
        if self.endpoint == "models":
            if req.method not in ("GET", "HEAD"):
                return await self.send_simple(405, error_json(405, "use GET"), extra=[("Allow", "GET")])
            return await self.send_simple(200, json.dumps({"object": "list", "data": [
                {"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "upstream"}]}).encode())
        if req.method != "POST":
            return await self.send_simple(405, error_json(405, f"{req.method} not allowed; use POST"),
                                          extra=[("Allow", "POST")])
        try:
            body = json.loads(req.body) if req.body.strip() else {}
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.outcome = "rejected"
            return await self.send_simple(400, error_json(400, f"request body is not a JSON object: {e}",
                                                          "invalid_request_error", None))
        self.model = body.get("model") if isinstance(body.get("model"), str) else DEFAULT_MODEL
        if script.no_answer:
            self.outcome = "no_answer"
            self.keep_alive = False
            await wait_client_gone(self.reader)
            self.end = time.monotonic()
            return
        at = req.t_request + script.headers_delay / 1000.0
        if script.reject_stream_options and "stream_options" in body:
            self.outcome = "rejected"
            return await self.send_simple(400, error_json(
                400, "Unrecognized request argument supplied: stream_options", "invalid_request_error"), at=at)
        if script.status is not None:
            self.outcome = "status"
            extra = [("Retry-After", "1")] if script.status == 429 else []
            return await self.send_simple(script.status, error_json(script.status), extra=extra, at=at)
        if body.get("stream") is not True:
            return await self.answer_whole(script, body, self.endpoint)
        return await self.stream(script, body, self.endpoint)

    def record(self) -> dict:
        return {"path": self.req.path, "spec": self.spec, "status": self.status,
                "t_request": self.req.t_request, "sends": self.sends, "first_byte": self.first_byte,
                "end": self.end, "outcome": self.outcome, "conn": self.conn.id, "seq": self.conn.seq,
                "method": self.req.method, "endpoint": self.endpoint, "model": self.model,
                "chunks": self.chunks, "reasoning": self.reasoning, "peer": self.conn.peer}


async def wait_client_gone(reader) -> None:
    try:
        while await reader.read(65536):
            pass
    except (ConnectionError, OSError, ssl.SSLError):
        pass


# --------------------------------------------------------------------------- server


@dataclass
class Conn:
    id: int
    peer: str
    seq: int = 0


class Upstream:
    def __init__(self, args):
        self.args = args
        self.ids = itertools.count(1)
        self.tasks: set[asyncio.Task] = set()
        self.log_file = open(args.log_file, "a", encoding="utf-8") if args.log_file else None

    def say(self, msg: str) -> None:
        print(f"upstream: {msg}", file=sys.stderr, flush=True)

    def finished(self, ex: Exchange) -> None:
        if ex.end is None:
            ex.end = time.monotonic()
        rec = ex.record()
        if self.log_file:
            self.log_file.write(json.dumps(rec) + "\n")
            self.log_file.flush()
        if not self.args.quiet:
            ms = lambda t: f"{(t - ex.req.t_request) * 1000:.1f}ms" if t is not None else "-"
            detail = ""
            if ex.sends:
                r = ex.reasoning
                first = ex.sends[r] if len(ex.sends) > r else None
                detail = f" chunks={len(ex.sends)}/{ex.chunks} ttft={ms(first)}"
            self.say(f"c{ex.conn.id}.{ex.conn.seq} {ex.req.method} {ex.req.target} -> "
                     f"{ex.status if ex.status is not None else '-'}{detail} end={ms(ex.end)} {ex.outcome}")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.tasks.add(task)
        peer = writer.get_extra_info("peername")
        conn = Conn(next(self.ids), f"{peer[0]}:{peer[1]}" if peer else "?")
        sock = writer.get_extra_info("socket")
        try:
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        ex = None
        try:
            while True:
                ex = None
                try:
                    req = await read_request(reader, writer)
                except BadRequest as e:
                    self.say(f"c{conn.id} bad request: {e}")
                    writer.write(response_head(e.status, [("Content-Type", "application/json"),
                                                          ("Connection", "close")]) + error_json(e.status, str(e)))
                    await writer.drain()
                    break
                if req is None:
                    break
                conn.seq += 1
                ex = Exchange(self, conn, req, reader, writer)
                try:
                    await ex.run()
                except ClientGone:
                    ex.outcome = "client_gone"
                    ex.keep_alive = False
                except (ConnectionError, OSError, ssl.SSLError):
                    ex.outcome = "client_gone"
                    ex.keep_alive = False
                self.finished(ex)
                if not ex.keep_alive or writer.transport.is_closing():
                    break
        except (ClientGone, ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:  # shutdown; not re-raised: asyncio would log it
            if ex is not None and ex.end is None:
                ex.outcome = "shutdown"
                self.finished(ex)
            writer.transport.abort()
        finally:
            self.tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def serve(self) -> int:
        args = self.args
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self.loop_exception)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        ctx = None
        if args.tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args.tls_cert, args.tls_key)
            ctx.set_alpn_protocols(["http/1.1"])
            if args.tls_client_ca:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(args.tls_client_ca)
        try:
            server = await asyncio.start_server(self.handle, args.host, args.port, ssl=ctx,
                                                limit=MAX_HEADER_BYTES, reuse_address=True,
                                                ssl_handshake_timeout=10 if ctx else None)
        except OSError as e:
            self.say(f"cannot listen on {args.host}:{args.port}: {e}")
            return 1
        port = server.sockets[0].getsockname()[1]
        scheme = "https" if ctx else "http"
        host = f"[{args.host}]" if ":" in args.host else args.host
        timing = "SCHED_FIFO" if args.realtime else "normal scheduling"
        self.say(f"listening on {scheme}://{host}:{port} (pid {os.getpid()}, {timing}); try: curl -N "
                 f"{scheme}://{host}:{port}/s/ttft=300,chunks=5/v1/chat/completions "
                 "-d '{\"model\":\"m\",\"stream\":true}'")
        if args.port_file:  # last: whoever sees it can connect, and stderr already says how we run
            tmp = f"{args.port_file}.tmp.{os.getpid()}"
            with open(tmp, "w") as f:
                f.write(f"{port}\n")
            os.replace(tmp, args.port_file)
        await stop.wait()
        server.close()
        for t in list(self.tasks):
            t.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=0.5)
        if args.port_file:
            try:
                os.unlink(args.port_file)
            except OSError:
                pass
        if self.log_file:
            self.log_file.close()
        self.say("stopped")
        return 0

    def loop_exception(self, loop, context) -> None:
        exc = context.get("exception")
        msg = context.get("message", "")
        self.say(f"{msg}: {exc!r}" if exc else msg)


def enter_realtime() -> bool:
    """Ask for SCHED_FIFO, best effort.

    This process is the reference clock of the tests: on a busy machine (2 cores
    compiling) a normal-priority wake-up is often a scheduler tick (4 ms) late,
    with SCHED_FIFO it is well under a millisecond. It sleeps almost all the time,
    so it takes nothing from the rest of the machine. Without the privilege
    (CAP_SYS_NICE), it runs with normal scheduling.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return True
    except (AttributeError, OSError):
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = a free port")
    p.add_argument("--port-file", help="the real port is written here once listening")
    p.add_argument("--log-file", help="JSON line per finished response")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--tls-client-ca", help="require client certificates signed by this CA")
    p.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    p.add_argument("--no-realtime", action="store_true",
                   help="do not ask for SCHED_FIFO (asked by default, used when permitted)")
    args = p.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if args.tls_client_ca and not args.tls_cert:
        p.error("--tls-client-ca needs --tls-cert/--tls-key")
    args.realtime = False if args.no_realtime else enter_realtime()
    try:
        return asyncio.run(Upstream(args).serve())
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
