#!/usr/bin/env python3
"""Scriptable streaming LLM upstream (OpenAI, Anthropic, Ollama, Gemini) for tests and demos.

Python 3.11 standard library only. It answers like an LLM server that streams
its answer (Server-Sent Events, or NDJSON for Ollama) in any of the dialects of
issue 8, with timing and faults scripted by the URL, so the exporter's clock
(DESIGN.md section 2) can be checked against a known schedule. The script (and
so the log's send times) is the same in every dialect; only the wording changes.

Usage:
  upstream.py --port 0 --port-file F [--host 127.0.0.1] [--log-file L.jsonl]
              [--tls-cert C --tls-key K [--tls-client-ca CA]] [--quiet]

  Binds (port 0 = a free port), writes the real port to --port-file atomically
  (write a temporary file, then rename) once listening, and serves until SIGTERM
  or SIGINT, then exits 0 within a second (removing the port file).

Endpoints (the dialect, as in a config's "api:", is named on the right):
  POST {prefix}/v1/chat/completions   chat.completion.chunk events      openai-chat
  POST {prefix}/v1/completions        text_completion events            openai-completions
  POST {prefix}/v1/messages           Anthropic Messages events         anthropic-messages
  POST {prefix}/v1/responses          OpenAI Responses events           openai-responses
  POST {prefix}/api/chat              Ollama NDJSON (message.content)   ollama-chat
  POST {prefix}/api/generate          Ollama NDJSON (response)          ollama-generate
  POST {prefix}/v1beta/models/{model}:streamGenerateContent?alt=sse    gemini
       (also :generateContent, one JSON answer; "/v1" or "/v1alpha" work as well)
  GET  {prefix}/v1/models             one model, for clients that look first
  GET  /healthz                       200 "ok"
  GET  /                              this text
  ("/v1" may be left out: {prefix}/chat/completions, {prefix}/messages,
  {prefix}/responses and {prefix}/models/M:streamGenerateContent work too.)
  No endpoint checks credentials (none ever did): authorization, x-api-key,
  x-goog-api-key and api-key are accepted as sent, and the log names which came.

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
  tpc=N             tokens per chunk (default 1): every chunk, reasoning ones too, carries
                    N words (tokens), as a batching server (vLLM under load) or a
                    coalescing proxy sends them; every usage figure counts tokens, not
                    chunks (completion_tokens = chunks x N); timing is per chunk
  finish=stop|length  finish_reason of the finish event (default stop)
  usage=0|1         force the usage event off/on (default: stream_options.include_usage)
  tail=MS           last content chunk -> end (finish event, usage, [DONE], end of body)
  keepalive=MS      ": keep-alive" comment every MS (grid from the headers) while waiting
  per_write=N       N content events per socket write, sent at the time of the last of them
  split=1           every write is split in two, inside the JSON of its last event: the
                    first half 1 ms before the scheduled time, the second at it
  crlf=0|1          CRLF line endings in the stream (default 0; 1 for gemini, as Gemini does)
  framing=chunked|close  Transfer-Encoding: chunked (default), or close-delimited body
  content_type=STR  Content-Type of the stream (default: the dialect's, see below)
  no_content_type=1 send the stream without any Content-Type header (as some gateways do)
  headers_delay=MS  request -> response headers; ttft still counts from the request,
                    so ttft includes it (if headers_delay > ttft, the first chunk
                    follows the headers at once)
  served_model=NAME the model every event names as answering (default: the one the
                    request names, in the body or, for gemini, the path), as an alias
                    resolved to a dated snapshot or a router does
  status=CODE       answer CODE (200-999) with an OpenAI-style JSON error body instead
                    of streaming (429 carries Retry-After: 1); sent after headers_delay
  error_body=STR    with status=CODE: this body instead (percent-encoded; e.g. a
                    gateway's {"status":"failure"%2C"message":"Something went wrong"})
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
  the time the stream would have ended (Ollama: "stream": false; Gemini:
  :generateContent). The keys are described with OpenAI's words above; below
  is what each dialect sends for them. Every dialect: one content chunk = one
  event (SSE) or one line (NDJSON) carrying one word (tpc words with tpc=N),
  reasoning chunks first; the text reassembles to the same words as
  openai-chat; output tokens = chunks x tpc (below, "chunks" in a usage figure
  means that).

Dialects (stream shapes follow the recordings in ../shared/sse-fixtures):
  anthropic-messages  SSE with "event:" names; Content-Type
      text/event-stream; charset=utf-8. Right after the headers, one write:
      message_start (usage.input_tokens), content_block_start (index 0: a
      "thinking" block when reasoning > 0, else "text"), ping. Content chunk:
      content_block_delta with text_delta (thinking_delta for reasoning chunks).
      The first text chunk after reasoning chunks is preceded, in its write, by
      signature_delta, content_block_stop 0 and content_block_start 1 (text).
      End: content_block_stop, message_delta (stop_reason end_turn, max_tokens
      when finish=length; usage.output_tokens = chunks), message_stop.
      Requires "max_tokens" in the body (else 400 invalid_request_error
      "max_tokens: Field required"). error_after: event: error with
      {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
      no_done: message_stop is left out (message_delta still comes).
      status=CODE: {"type":"error","error":{"type":...,"message":...},"request_id"}.
  openai-responses  SSE with "event:" names equal to each JSON "type", and a
      sequence_number on every event (0, 1, ...); Content-Type
      text/event-stream; charset=utf-8. After the headers: response.created,
      response.in_progress, then output_item.added + content_part.added of the
      message item, or, when reasoning > 0, output_item.added of a reasoning
      item + response.reasoning_summary_part.added. Content chunk:
      response.output_text.delta (response.reasoning_summary_text.delta for
      reasoning chunks); the first text chunk after reasoning is preceded by
      reasoning_summary_text.done, reasoning_summary_part.done, output_item.done
      and the message item's output_item.added + content_part.added (so the text
      is output_index 1). End: output_text.done, content_part.done,
      output_item.done, response.completed (usage input_tokens, output_tokens,
      total_tokens, output_tokens_details.reasoning_tokens = reasoning), or
      response.incomplete with incomplete_details.reason "max_output_tokens"
      when finish=length. error_after: event: error with {"type":"error",
      "code":"server_error","message":...,"param":null,"sequence_number":N}.
      no_done: response.completed / response.incomplete is left out.
      Takes "input" and "max_output_tokens"; status=CODE: OpenAI-style body.
  ollama-chat, ollama-generate  NDJSON, Content-Type application/x-ndjson, one
      JSON object per line, streamed unless the body says "stream": false.
      Content chunk (chat): {"model","created_at","message":{"role":"assistant",
      "content":WORD},"done":false}; reasoning chunks carry message.thinking and
      an empty content. generate: "response":WORD (reasoning: "thinking", empty
      "response"). Nothing is sent after the headers (role_first=1: one line
      with empty content). End: one done:true line with done_reason "stop" or
      "length" (finish=length), prompt_eval_count, eval_count = chunks, and
      durations in ns derived from the script, not measured: load_duration =
      min(1 ms, ttft/4), prompt_eval_duration = ttft - load_duration,
      eval_duration = last content chunk - first (scheduled), total_duration =
      request -> end; generate adds a short "context". created_at is the
      scheduled wall-clock time. error_after: a line {"error":"model runner has
      unexpectedly stopped, ..."}. bad_json_after: a line "{not json". split:
      inside the last line of the write. keepalive: nothing is sent (NDJSON has
      no comments). no_done: the done:true line is left out.
      options.num_predict / options.temperature are accepted; status=CODE:
      {"error":"..."}.
  gemini  SSE "data:" lines only (no event names, no [DONE]), CRLF line endings
      ("\r\n\r\n" between events) unless crlf=0, Content-Type
      text/event-stream. Requires ?alt=sse on streamGenerateContent (400 without).
      The model comes from the path. Content chunk: {"candidates":[{"content":
      {"parts":[{"text":WORD}],"role":"model"},"index":0}],"usageMetadata":
      {"promptTokenCount","totalTokenCount",...},"modelVersion","responseId"};
      reasoning chunks are parts with "thought": true. Nothing is sent after the
      headers (role_first=1: a chunk with an empty text part). End: one chunk
      with an empty text part, "finishReason" STOP (MAX_TOKENS when
      finish=length) and full usageMetadata (promptTokenCount,
      candidatesTokenCount = chunks - reasoning, thoughtsTokenCount = reasoning
      when > 0, totalTokenCount = prompt + chunks). error_after: data:
      {"error":{"code":503,"message":"The model is overloaded.","status":
      "UNAVAILABLE"}}. no_done: the finishReason chunk is left out (the body
      ends after the last content chunk, at the end time). status=CODE:
      {"error":{"code","message","status"}}.
  In the SSE dialects keepalive=MS sends ": keep-alive" comments and
  bad_json_after sends "data: {not json" (with the dialect's content event name,
  content_block_delta / response.output_text.delta, where events are named).
  usage=, reject_stream_options= and role_first= (Anthropic, Responses: their
  opening events always come) are OpenAI-only; elsewhere they do nothing unless
  said above. A bad spec is answered 400 in the dialect's error shape.

Log file (--log-file): one JSON line per finished response, flushed per line:
  {"path", "spec", "status", "t_request", "sends", "first_byte", "end", "outcome",
   "conn", "seq", "method", "endpoint", "api", "model", "chunks", "reasoning", "tpc",
   "peer", "query", "auth", "anthropic_version", "max_tokens"}
  endpoint: chat, completions, models, anthropic-messages, openai-responses,
  ollama-chat, ollama-generate, gemini; api: the dialect (openai-chat for chat,
  openai-completions for completions, else the endpoint). query: the raw query
  string; auth: the names of the auth headers sent (values are not logged);
  max_tokens: the dialect's limit field (max_tokens, max_output_tokens,
  options.num_predict, generationConfig.maxOutputTokens), or null.
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
import re
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
    tpc: int = 1                      # tokens (words) per chunk
    finish: str = "stop"
    usage: bool | None = None
    tail: float = 0.0
    keepalive: float | None = None
    per_write: int = 1
    split: bool = False
    crlf: bool | None = None          # None: the dialect's default (CRLF for gemini only)
    framing: str = "chunked"
    content_type: str | None = None   # None: the dialect's default
    no_content_type: bool = False
    error_body: str | None = None
    headers_delay: float = 0.0
    status: int | None = None
    reject_stream_options: bool = False
    no_answer: bool = False
    close_after: int | None = None
    hang_after: int | None = None
    error_after: int | None = None
    bad_json_after: int | None = None
    served_model: str | None = None   # None: the model the request names
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

    @property
    def tokens(self) -> int:
        """Output tokens of the whole answer, reasoning included: what usage reports."""
        return self.chunks * self.tpc

    @property
    def reasoning_tokens(self) -> int:
        return self.reasoning * self.tpc

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
    return _int(key, v, lo=200, hi=999)   # 600-999: a status of no class (http_other)


SPEC_KEYS = {
    "ttft": _ms, "gap": _ms, "jitter": _ms, "tail": _ms, "headers_delay": _ms,
    "keepalive": lambda k, v: _ms(k, v, positive=True),
    "chunks": _int, "reasoning": _int, "close_after": _int, "hang_after": _int,
    "error_after": _int, "bad_json_after": _int,
    "per_write": lambda k, v: _int(k, v, lo=1),
    "tpc": lambda k, v: _int(k, v, lo=1, hi=64),
    "seed": lambda k, v: _int(k, v, lo=0, hi=2**63),
    "stall": _stall, "status": _status,
    "role_first": _flag, "split": _flag, "crlf": _flag, "no_answer": _flag,
    "no_done": _flag, "reject_stream_options": _flag,
    "usage": _flag,
    "finish": _choice("stop", "length"),
    "framing": _choice("chunked", "close"),
    "content_type": lambda k, v: v,
    "no_content_type": _flag,
    "error_body": lambda k, v: v,
    "served_model": lambda k, v: v,
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
    if script.content_type is not None and (not script.content_type
                                            or any(c in script.content_type for c in "\r\n")):
        raise SpecError("content_type must be a non-empty header value")
    if script.no_content_type and script.content_type is not None:
        raise SpecError("no_content_type=1 and content_type= contradict each other")
    if script.error_body is not None and script.status is None:
        raise SpecError("error_body= needs status=CODE")
    return script


ENDPOINTS = (
    ("/v1/chat/completions", "chat"), ("/chat/completions", "chat"),
    ("/v1/completions", "completions"), ("/completions", "completions"),
    ("/v1/models", "models"), ("/models", "models"),
    ("/v1/messages", "anthropic-messages"), ("/messages", "anthropic-messages"),
    ("/v1/responses", "openai-responses"), ("/responses", "openai-responses"),
    ("/api/chat", "ollama-chat"), ("/api/generate", "ollama-generate"),
)
# {prefix}[/v1beta|/v1|/v1alpha]/models/{model}:streamGenerateContent (the ":" may be %3A)
GEMINI_PATH = re.compile(r"^(?P<prefix>.*?)(?:/v1beta|/v1alpha|/v1)?/models/(?P<model>[^/:%]+)"
                         r"(?::|%3[aA])(?P<method>streamGenerateContent|generateContent)$")
AUTH_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")


def _prefix_spec(prefix: str):
    """"" -> (True, None); "/s" -> (True, ""); "/s/<spec>" -> (True, spec); else (False, None)."""
    if prefix == "":
        return True, None
    if prefix == "/s":
        return True, ""
    if prefix.startswith("/s/"):
        return True, prefix[3:]
    return False, None


def route(path: str):
    """(endpoint, raw spec or None, model from the path or None, method or None), or None."""
    m = GEMINI_PATH.match(path)
    if m:
        ok, spec = _prefix_spec(m["prefix"])
        return ("gemini", spec, unquote(m["model"]), m["method"]) if ok else None
    for suffix, endpoint in ENDPOINTS:
        if path.endswith(suffix):
            ok, spec = _prefix_spec(path[: -len(suffix)])
            return (endpoint, spec, None, None) if ok else None
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
    query: str = ""

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
    query = target.split("?", 1)[1] if "?" in target else ""
    return Request(method, target, path, version, headers, body, time.monotonic(), query)


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


def _texts(x) -> list[str]:
    """Every string of prompt text inside a request field (str, list of parts, items)."""
    if isinstance(x, str):
        return [x]
    out = []
    if isinstance(x, list):
        for p in x:
            out += _texts(p)
    elif isinstance(x, dict):
        for k in ("text", "content", "parts"):
            if k in x:
                out += _texts(x[k])
    return out


def estimate_prompt_tokens(body: dict, endpoint: str) -> int:
    """About 4 characters a token, plus a little per message: like a tokenizer, roughly."""
    text, overhead = [], 0
    if endpoint in ("chat", "anthropic-messages", "ollama-chat"):
        msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
        for m in msgs:
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, str):
                text.append(c)
            elif isinstance(c, list):
                text += [p.get("text", "") for p in c if isinstance(p, dict)]
        if endpoint != "chat":
            text += _texts(body.get("system"))
        overhead = 3 * len(msgs) + 3
    elif endpoint == "openai-responses":
        text += _texts(body.get("input")) + _texts(body.get("instructions"))
        overhead = 4
    elif endpoint == "gemini":
        text += _texts(body.get("contents")) + _texts(body.get("systemInstruction"))
    else:  # completions, ollama-generate
        p = body.get("prompt", "")
        text += p if isinstance(p, list) else [str(p)]
        text += _texts(body.get("system")) if endpoint == "ollama-generate" else []
    chars = sum(len(t) for t in text if isinstance(t, str))
    return max(1, (chars + 3) // 4 + overhead)


def _rand_id(n: int, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") -> str:
    return "".join(random.choice(alphabet) for _ in range(n))


class Dialect:
    """How one API dialect words the scripted stream; timing stays with the Exchange.

    Each method returns the encoded events (bytes) of one moment of the script:
    opening() right after the response headers; content(i) for content chunk i,
    the content event LAST (events before it, e.g. a new content block, go in the
    same write); error() for error_after; closing(no_done) at the end time, the end
    marker left out when no_done; bad() for bad_json_after.
    """

    api = "?"
    framing = "sse"            # "sse" or "ndjson"
    content_type = "text/event-stream"
    crlf = False               # default line endings (crlf=0|1 overrides)
    bad_event = None           # SSE event name of the bad_json_after event

    def __init__(self, ex, script: Script, body: dict, endpoint: str, model: str, prompt_tokens: int):
        self.ex, self.s, self.body, self.endpoint, self.model = ex, script, body, endpoint, model
        self.pt = prompt_tokens
        self.nl = b"\n"
        self.created = int(time.time())
        self.offsets: list[float] = []

    # -- text of the script
    def piece(self, i: int) -> str:
        """Chunk i's text: tpc words, the next of the word sequence."""
        start = 0 if i < self.s.reasoning else self.s.reasoning
        n = self.s.tpc
        words = " ".join(WORDS[(i * n + k) % len(WORDS)] for k in range(n))
        return words if i == start else " " + words

    def text(self, lo: int, hi: int) -> str:
        return "".join(self.piece(i) for i in range(lo, hi))

    @property
    def n_text(self) -> int:
        return self.s.chunks - self.s.reasoning

    # -- encodings
    def sse(self, obj, event: str | None = None, seps=(",", ":")) -> bytes:
        data = obj if isinstance(obj, str) else json.dumps(obj, separators=seps)
        head = b"event: " + event.encode() + self.nl if event else b""
        return head + b"data: " + data.encode() + self.nl + self.nl

    def line(self, obj) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode() + self.nl

    def bad(self) -> bytes:
        if self.framing == "ndjson":
            return b"{not json" + self.nl
        head = b"event: " + self.bad_event.encode() + self.nl if self.bad_event else b""
        return head + b"data: {not json" + self.nl + self.nl

    # -- the script's moments (overridden)
    def opening(self) -> list[bytes]:
        return []

    def role_first(self) -> list[bytes]:
        return []

    def content(self, i: int) -> list[bytes]:
        raise NotImplementedError

    def error(self) -> bytes:
        raise NotImplementedError

    def closing(self, no_done: bool) -> list[bytes]:
        raise NotImplementedError

    def whole(self) -> dict:
        raise NotImplementedError

    @classmethod
    def error_body(cls, status: int, message: str | None = None, etype: str | None = None, code=None) -> bytes:
        return error_json(status, message, etype, code)


class OpenAIChat(Dialect):
    """openai-chat and openai-completions (the endpoint says which)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.chat = self.endpoint == "chat"
        self.api = "openai-chat" if self.chat else "openai-completions"
        self.cid = ("chatcmpl-" if self.chat else "cmpl-") + uuid.uuid4().hex[:24]
        self.obj = "chat.completion.chunk" if self.chat else "text_completion"

    def chunk(self, choice_extra: dict | None, finish=None, usage=None) -> bytes:
        d = {"id": self.cid, "object": self.obj, "created": self.created, "model": self.model}
        if self.chat:
            d["system_fingerprint"] = "fp_upstream"
        if choice_extra is None:
            d["choices"] = []
        elif self.chat:
            d["choices"] = [{"index": 0, "delta": choice_extra, "logprobs": None, "finish_reason": finish}]
        else:
            d["choices"] = [{"text": choice_extra.get("text", ""), "index": 0, "logprobs": None,
                             "finish_reason": finish, **{k: v for k, v in choice_extra.items() if k != "text"}}]
        if usage is not None:
            d["usage"] = usage
        return self.sse(d)

    def role_first(self):
        return [self.chunk({"role": "assistant", "content": ""} if self.chat else {"text": ""})]

    def content(self, i):
        text = self.piece(i)
        if i < self.s.reasoning:
            return [self.chunk({"content": None, "reasoning_content": text} if self.chat
                               else {"text": "", "reasoning_content": text})]
        return [self.chunk({"content": text} if self.chat else {"text": text})]

    def error(self):
        return self.sse({"error": {"message": "upstream overloaded", "type": "server_error"}})

    def closing(self, no_done):
        s, body = self.s, self.body
        out = [self.chunk({} if self.chat else {"text": ""}, finish=s.finish)]
        want_usage = s.usage if s.usage is not None else bool(
            isinstance(body.get("stream_options"), dict) and body["stream_options"].get("include_usage") is True)
        if want_usage:
            out.append(self.chunk(None, usage={"prompt_tokens": self.pt, "completion_tokens": s.tokens,
                                               "total_tokens": self.pt + s.tokens}))
        if not no_done:
            out.append(self.sse("[DONE]"))
        return out

    def whole(self):
        s = self.s
        text = self.text(s.reasoning, s.chunks)
        usage = {"prompt_tokens": self.pt, "completion_tokens": s.tokens, "total_tokens": self.pt + s.tokens}
        if self.chat:
            return {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion",
                    "created": self.created, "model": self.model, "system_fingerprint": "fp_upstream",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "logprobs": None, "finish_reason": s.finish}], "usage": usage}
        return {"id": "cmpl-" + uuid.uuid4().hex[:24], "object": "text_completion", "created": self.created,
                "model": self.model, "choices": [{"text": text, "index": 0, "logprobs": None,
                                                  "finish_reason": s.finish}], "usage": usage}


ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


class AnthropicMessages(Dialect):
    api = "anthropic-messages"
    content_type = "text/event-stream; charset=utf-8"
    bad_event = "content_block_delta"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.msg_id = "msg_01" + _rand_id(22)
        self.block = -1          # index of the open content block
        self.block_kind = None   # "thinking" or "text" while a block is open

    def ev(self, name: str, obj: dict) -> bytes:
        return self.sse(obj, event=name)

    def start_block(self, kind: str) -> bytes:
        self.block += 1
        self.block_kind = kind
        cb = {"type": "thinking", "thinking": "", "signature": ""} if kind == "thinking" else {"type": "text", "text": ""}
        return self.ev("content_block_start", {"type": "content_block_start", "index": self.block, "content_block": cb})

    def stop_block(self) -> list[bytes]:
        out = []
        if self.block_kind == "thinking":
            out.append(self.ev("content_block_delta", {
                "type": "content_block_delta", "index": self.block,
                "delta": {"type": "signature_delta", "signature": "Eq" + _rand_id(86) + "=="}}))
        if self.block_kind is not None:
            out.append(self.ev("content_block_stop", {"type": "content_block_stop", "index": self.block}))
        self.block_kind = None
        return out

    def opening(self):
        usage = {"input_tokens": self.pt, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": 1, "service_tier": "standard"}
        return [self.ev("message_start", {"type": "message_start", "message": {
                    "id": self.msg_id, "type": "message", "role": "assistant", "model": self.model,
                    "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
                self.start_block("thinking" if self.s.reasoning > 0 else "text"),
                self.ev("ping", {"type": "ping"})]

    def content(self, i):
        out = []
        if i < self.s.reasoning:
            delta = {"type": "thinking_delta", "thinking": self.piece(i)}
        else:
            if self.block_kind != "text":
                out += self.stop_block()
                out.append(self.start_block("text"))
            delta = {"type": "text_delta", "text": self.piece(i)}
        out.append(self.ev("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                                   "delta": delta}))
        return out

    def error(self):
        return self.ev("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})

    def stop_reason(self) -> str:
        return "max_tokens" if self.s.finish == "length" else "end_turn"

    def closing(self, no_done):
        out = self.stop_block()
        out.append(self.ev("message_delta", {"type": "message_delta",
                                             "delta": {"stop_reason": self.stop_reason(), "stop_sequence": None},
                                             "usage": {"output_tokens": self.s.tokens}}))
        if not no_done:
            out.append(self.ev("message_stop", {"type": "message_stop"}))
        return out

    def whole(self):
        s = self.s
        content = []
        if s.reasoning:
            content.append({"type": "thinking", "thinking": self.text(0, s.reasoning),
                            "signature": "Eq" + _rand_id(86) + "=="})
        if self.n_text or not s.reasoning:
            content.append({"type": "text", "text": self.text(s.reasoning, s.chunks)})
        return {"id": self.msg_id, "type": "message", "role": "assistant", "model": self.model,
                "content": content, "stop_reason": self.stop_reason(), "stop_sequence": None,
                "usage": {"input_tokens": self.pt, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": s.tokens, "service_tier": "standard"}}

    @classmethod
    def error_body(cls, status, message=None, etype=None, code=None):
        t, m = ANTHROPIC_ERRORS.get(status, ("api_error" if status >= 500 else "invalid_request_error",
                                             f"Scripted error status {status}."))
        return json.dumps({"type": "error", "error": {"type": t, "message": message or m},
                           "request_id": "req_011C" + _rand_id(20)}).encode() + b"\n"


class OpenAIResponses(Dialect):
    api = "openai-responses"
    content_type = "text/event-stream; charset=utf-8"
    bad_event = "response.output_text.delta"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seq = 0
        self.resp_id = "resp_" + uuid.uuid4().hex + uuid.uuid4().hex[:16]
        self.rs_id = "rs_" + uuid.uuid4().hex + uuid.uuid4().hex[:16]
        self.msg_id = "msg_" + uuid.uuid4().hex + uuid.uuid4().hex[:16]
        self.items: list[dict] = []   # finished output items, for response.completed
        self.open = None              # "reasoning" or "message" while an output item is open

    def ev(self, name: str, obj: dict) -> bytes:
        d = {"type": name, **obj, "sequence_number": self.seq}
        self.seq += 1
        return self.sse(d, event=name)

    def response(self, status: str, output=None, usage=None, incomplete=None) -> dict:
        b = self.body
        return {"id": self.resp_id, "object": "response", "created_at": self.created, "status": status,
                "background": False, "error": None, "incomplete_details": incomplete,
                "instructions": b.get("instructions"), "max_output_tokens": b.get("max_output_tokens"),
                "max_tool_calls": None, "model": self.model, "output": output or [],
                "parallel_tool_calls": True, "previous_response_id": None,
                "reasoning": {"effort": None, "summary": None}, "service_tier": "default", "store": True,
                "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
                "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
                "usage": usage, "user": None, "metadata": {}}

    def obfuscation(self, text: str) -> str:
        return _rand_id(max(1, 16 - len(text)))

    def open_reasoning(self) -> list[bytes]:
        self.open = "reasoning"
        return [self.ev("response.output_item.added", {"output_index": len(self.items), "item": {
                    "id": self.rs_id, "type": "reasoning", "summary": []}}),
                self.ev("response.reasoning_summary_part.added", {
                    "item_id": self.rs_id, "output_index": len(self.items), "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}})]

    def open_message(self) -> list[bytes]:
        self.open = "message"
        return [self.ev("response.output_item.added", {"output_index": len(self.items), "item": {
                    "id": self.msg_id, "type": "message", "status": "in_progress", "content": [],
                    "role": "assistant"}}),
                self.ev("response.content_part.added", {
                    "content_index": 0, "item_id": self.msg_id, "output_index": len(self.items),
                    "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}})]

    def close_item(self) -> list[bytes]:
        s, idx = self.s, len(self.items)
        if self.open == "reasoning":
            text = self.text(0, s.reasoning)
            part = {"type": "summary_text", "text": text}
            item = {"id": self.rs_id, "type": "reasoning", "summary": [part]}
            out = [self.ev("response.reasoning_summary_text.done", {
                       "item_id": self.rs_id, "output_index": idx, "summary_index": 0, "text": text}),
                   self.ev("response.reasoning_summary_part.done", {
                       "item_id": self.rs_id, "output_index": idx, "summary_index": 0, "part": part}),
                   self.ev("response.output_item.done", {"output_index": idx, "item": item})]
        elif self.open == "message":
            text = self.text(s.reasoning, s.chunks)
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
            item = {"id": self.msg_id, "type": "message",
                    "status": "incomplete" if s.finish == "length" else "completed",
                    "content": [part], "role": "assistant"}
            out = [self.ev("response.output_text.done", {"content_index": 0, "item_id": self.msg_id,
                                                         "logprobs": [], "output_index": idx, "text": text}),
                   self.ev("response.content_part.done", {"content_index": 0, "item_id": self.msg_id,
                                                          "output_index": idx, "part": part}),
                   self.ev("response.output_item.done", {"output_index": idx, "item": item})]
        else:
            return []
        self.items.append(item)
        self.open = None
        return out

    def opening(self):
        out = [self.ev("response.created", {"response": self.response("in_progress")}),
               self.ev("response.in_progress", {"response": self.response("in_progress")})]
        return out + (self.open_reasoning() if self.s.reasoning > 0 else self.open_message())

    def content(self, i):
        text = self.piece(i)
        idx = len(self.items)
        if i < self.s.reasoning:
            return [self.ev("response.reasoning_summary_text.delta", {
                "item_id": self.rs_id, "output_index": idx, "summary_index": 0, "delta": text,
                "obfuscation": self.obfuscation(text)})]
        out = []
        if self.open != "message":
            out += self.close_item() + self.open_message()
            idx = len(self.items)
        out.append(self.ev("response.output_text.delta", {
            "content_index": 0, "delta": text, "item_id": self.msg_id, "logprobs": [],
            "obfuscation": self.obfuscation(text), "output_index": idx}))
        return out

    def error(self):
        return self.ev("error", {"code": "server_error",
                                 "message": "The server had an error while processing your request. Sorry about that!",
                                 "param": None})

    def usage(self) -> dict:
        s = self.s
        return {"input_tokens": self.pt, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": s.tokens, "output_tokens_details": {"reasoning_tokens": s.reasoning_tokens},
                "total_tokens": self.pt + s.tokens}

    def final_response(self) -> tuple[str, dict]:
        if self.s.finish == "length":
            return "response.incomplete", self.response("incomplete", self.items, self.usage(),
                                                        {"reason": "max_output_tokens"})
        return "response.completed", self.response("completed", self.items, self.usage())

    def closing(self, no_done):
        out = self.close_item()
        if not no_done:
            name, resp = self.final_response()
            out.append(self.ev(name, {"response": resp}))
        return out

    def whole(self):
        s = self.s
        if s.reasoning:
            self.open = "reasoning"
            self.close_item()
        if self.n_text or not s.reasoning:
            self.open = "message"
            self.close_item()
        resp = self.final_response()[1]
        text = self.text(s.reasoning, s.chunks)
        return {**resp, "output_text": text}


class Ollama(Dialect):
    """ollama-chat (/api/chat) and ollama-generate (/api/generate)."""

    framing = "ndjson"
    content_type = "application/x-ndjson"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.chat = self.endpoint == "ollama-chat"
        self.api = self.endpoint
        self.wall0 = time.time() - (time.monotonic() - self.ex.req.t_request)

    def created_at(self, off: float) -> str:
        t = self.wall0 + off
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1e6):06d}Z"

    def obj(self, off: float, text: str, thinking: str | None = None, done=False) -> dict:
        d = {"model": self.model, "created_at": self.created_at(off)}
        if self.chat:
            msg = {"role": "assistant", "content": text}
            if thinking is not None:
                msg["thinking"] = thinking
            d["message"] = msg
        else:
            d["response"] = text
            if thinking is not None:
                d["thinking"] = thinking
        if not done:
            d["done"] = False
        return d

    def role_first(self):
        return [self.line(self.obj(self.s.headers_delay / 1000.0, ""))]

    def content(self, i):
        off = self.offsets[i]
        if i < self.s.reasoning:
            return [self.line(self.obj(off, "", self.piece(i)))]
        return [self.line(self.obj(off, self.piece(i)))]

    def error(self):
        return self.line({"error": "model runner has unexpectedly stopped, this may be due to resource "
                                   "limitations or an internal error, check ollama server logs for details"})

    def timings(self) -> dict:
        """Server-side durations (ns) derived from the script, not measured."""
        s, offs = self.s, self.offsets
        ttft = offs[0] if offs else s.ttft / 1000.0
        load = min(0.001, ttft / 4)
        ns = lambda x: int(round(max(0.0, x) * 1e9))
        return {"total_duration": ns(s.end_offset(offs)), "load_duration": ns(load),
                "prompt_eval_count": self.pt, "prompt_eval_duration": ns(ttft - load),
                "eval_count": s.tokens, "eval_duration": ns(offs[-1] - offs[0] if offs else 0.0)}

    def final(self, text="", thinking=None) -> dict:
        d = self.obj(self.s.end_offset(self.offsets), text, thinking, done=True)
        reason = "length" if self.s.finish == "length" else "stop"
        if self.chat:
            d.update(done_reason=reason, done=True)
        else:
            d.update(done=True, done_reason=reason, context=[(7 * i + 1) % 262144 for i in range(self.pt + self.s.tokens)])
        d.update(self.timings())
        return d

    def closing(self, no_done):
        return [] if no_done else [self.line(self.final())]

    def whole(self):
        s = self.s
        return self.final(self.text(s.reasoning, s.chunks), self.text(0, s.reasoning) if s.reasoning else None)

    @classmethod
    def error_body(cls, status, message=None, etype=None, code=None):
        m = message or {400: "invalid request", 404: "model not found, try pulling it first",
                        429: "server busy, please try again.  maximum pending requests exceeded",
                        500: "an error was encountered while running the model",
                        503: "server overloaded, please try again later"}.get(status, f"scripted error status {status}")
        return json.dumps({"error": m}).encode() + b"\n"


GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL",
                 501: "NOT_IMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
GEMINI_MESSAGES = {400: "Request contains an invalid argument.", 403: "Permission denied.",
                   401: "API key not valid. Please pass a valid API key.",
                   404: "models/x is not found for API version v1beta.",
                   429: "Resource has been exhausted (e.g. check quota).",
                   500: "An internal error has occurred.", 503: "The model is overloaded. Please try again later.",
                   504: "Deadline exceeded."}


class Gemini(Dialect):
    api = "gemini"
    crlf = True
    seps = (",", ": ")   # Gemini's JSON: {"text": "The"},"role": "model"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.rid = _rand_id(23)

    def chunk(self, parts: list, finish: str | None = None, final=False) -> dict:
        cand = {"content": {"parts": parts, "role": "model"}}
        if finish:
            cand["finishReason"] = finish
        cand["index"] = 0
        return {"candidates": [cand], "usageMetadata": self.usage(final), "modelVersion": self.model,
                "responseId": self.rid}

    def usage(self, final: bool) -> dict:
        s = self.s
        if not final:
            return {"promptTokenCount": self.pt, "totalTokenCount": self.pt,
                    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.pt}]}
        u = {"promptTokenCount": self.pt, "candidatesTokenCount": self.n_text * s.tpc,
             "totalTokenCount": self.pt + s.tokens,
             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.pt}]}
        if s.reasoning:
            u["thoughtsTokenCount"] = s.reasoning_tokens
        return u

    def ev(self, obj) -> bytes:
        return self.sse(obj, seps=self.seps)

    def finish_reason(self) -> str:
        return "MAX_TOKENS" if self.s.finish == "length" else "STOP"

    def role_first(self):
        return [self.ev(self.chunk([{"text": ""}]))]

    def content(self, i):
        part = {"text": self.piece(i)}
        if i < self.s.reasoning:
            part["thought"] = True
        return [self.ev(self.chunk([part]))]

    def error(self):
        return self.ev({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})

    def closing(self, no_done):
        return [] if no_done else [self.ev(self.chunk([{"text": ""}], self.finish_reason(), final=True))]

    def whole(self):
        s = self.s
        parts = [{"text": self.text(0, s.reasoning), "thought": True}] if s.reasoning else []
        parts.append({"text": self.text(s.reasoning, s.chunks)})
        return self.chunk(parts, self.finish_reason(), final=True)

    @classmethod
    def error_body(cls, status, message=None, etype=None, code=None):
        return json.dumps({"error": {"code": status,
                                     "message": message or GEMINI_MESSAGES.get(status, f"Scripted error status {status}."),
                                     "status": GEMINI_STATUS.get(status, "UNKNOWN")}}, indent=2).encode() + b"\n"


DIALECTS = {"chat": OpenAIChat, "completions": OpenAIChat, "anthropic-messages": AnthropicMessages,
            "openai-responses": OpenAIResponses, "ollama-chat": Ollama, "ollama-generate": Ollama,
            "gemini": Gemini}
API_OF = {"chat": "openai-chat", "completions": "openai-completions", "models": "openai-models"}


def max_tokens_of(body: dict, endpoint: str):
    """The request's output-token limit, in the dialect's own field (for the log)."""
    if endpoint == "openai-responses":
        return body.get("max_output_tokens")
    if endpoint in ("ollama-chat", "ollama-generate"):
        o = body.get("options")
        return o.get("num_predict") if isinstance(o, dict) else None
    if endpoint == "gemini":
        g = body.get("generationConfig")
        return g.get("maxOutputTokens") if isinstance(g, dict) else None
    v = body.get("max_tokens")
    return v if v is not None else body.get("max_completion_tokens")


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
        self.tpc = 1
        self.api = None
        self.max_tokens = None
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

    # -- SSE keep-alives and precise waits
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
        d = last.find(b"data: ")  # SSE: cut inside the JSON after "data: "; NDJSON: mid-line
        inner = d + len(b"data: ") + (len(last) - d - len(b"data: ")) // 2 if d >= 0 else len(last) // 2
        cut = min(max(len(payload) - len(last) + inner, 1), len(payload) - 1)
        await self.wait(deadline - SPLIT_LEAD_S)
        t1 = await self.write_raw(self.frame(payload[:cut]))
        await sleep_until(max(deadline, t1 + SPLIT_LEAD_S))  # no keep-alive inside an event
        return await self.write_raw(self.frame(payload[cut:], final))

    async def stream(self, script: Script, d: Dialect) -> None:
        req = self.req
        t0 = req.t_request
        rng = random.Random(script.seed)
        offsets = script.content_offsets(rng)
        d.offsets = offsets
        self.chunks, self.reasoning, self.tpc = script.chunks, script.reasoning, script.tpc
        crlf = script.crlf if script.crlf is not None else d.crlf
        self.nl = d.nl = b"\r\n" if crlf else b"\n"
        if d.framing == "sse" and script.keepalive:
            self.keepalive_s = script.keepalive / 1000.0
        close_framing = script.framing == "close" or req.version == "HTTP/1.0"
        self.chunked = not close_framing
        if close_framing:
            self.keep_alive = False

        # Response headers, then the dialect's opening events at once.
        await self.wait(t0 + script.headers_delay / 1000.0, keepalive=False)
        headers = [] if script.no_content_type else [("Content-Type", script.content_type or d.content_type)]
        headers.append(("Cache-Control", "no-cache"))
        if self.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        headers += [("Connection", "keep-alive" if self.keep_alive else "close"),
                    ("X-Request-Id", "req_" + uuid.uuid4().hex[:24])]
        self.status = 200
        self.headers_at = await self.write_raw(response_head(200, headers))
        opening = d.opening() + (d.role_first() if script.role_first else [])
        if opening:
            await self.write_raw(self.frame(b"".join(opening)))

        # Content chunks, up to the first fault.
        faults = [(n, kind) for n, kind in ((script.close_after, "close"), (script.hang_after, "hang"),
                                            (script.error_after, "error")) if n is not None]
        fault_n, fault = min(faults) if faults else (None, None)
        n_content = min(script.chunks, fault_n) if fault else script.chunks
        end_at = t0 + script.end_offset(offsets)
        stop_at = t0 + offsets[n_content] if n_content < script.chunks else end_at
        group: list[bytes] = []
        in_group = 0
        for i in range(n_content):
            if script.bad_json_after == i:
                group.append(d.bad())
            group += d.content(i)
            in_group += 1
            if in_group == script.per_write or i == n_content - 1:
                t = await self.send_events(group, t0 + offsets[i], script.split)
                self.sends += [t] * in_group
                group, in_group = [], 0
        if script.bad_json_after == n_content:  # after the last chunk sent
            group.append(d.bad())

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
            group.append(d.error())
            self.end = await self.send_events(group, stop_at, script.split, final=True)
            self.outcome = "error_event"
        else:
            group += d.closing(script.no_done)
            self.end = await self.send_events(group, end_at, script.split, final=True)
        if close_framing:
            self.writer.close()
            self.end = time.monotonic()

    async def answer_whole(self, script: Script, d: Dialect) -> None:
        """A request that does not stream: one JSON answer when the stream would have ended."""
        offsets = script.content_offsets(random.Random(script.seed))
        d.offsets = offsets
        self.chunks, self.tpc = script.chunks, script.tpc
        await self.send_simple(200, json.dumps(d.whole()).encode() + b"\n",
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
                                                               "/v1/chat/completions or /s/<spec>/v1/chat/completions "
                                                               "(GET / lists every endpoint)",
                                                          "invalid_request_error", "not_found"))
        self.endpoint, raw_spec, path_model, method = routed
        self.api = API_OF.get(self.endpoint, self.endpoint)
        dialect = DIALECTS.get(self.endpoint, OpenAIChat)
        self.spec = unquote(raw_spec) if raw_spec is not None else None
        try:
            script = parse_spec(raw_spec)
        except SpecError as e:
            self.outcome = "rejected"
            return await self.send_simple(400, dialect.error_body(400, f"bad upstream spec: {e}",
                                                                  "invalid_request_error", "bad_spec"))
        if self.endpoint == "models":
            if req.method not in ("GET", "HEAD"):
                return await self.send_simple(405, error_json(405, "use GET"), extra=[("Allow", "GET")])
            return await self.send_simple(200, json.dumps({"object": "list", "data": [
                {"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "upstream"}]}).encode())
        if req.method != "POST":
            return await self.send_simple(405, dialect.error_body(405, f"{req.method} not allowed; use POST"),
                                          extra=[("Allow", "POST")])
        try:
            body = json.loads(req.body) if req.body.strip() else {}
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.outcome = "rejected"
            return await self.send_simple(400, dialect.error_body(400, f"request body is not a JSON object: {e}",
                                                                  "invalid_request_error", None))
        if script.served_model:
            self.model = script.served_model
        elif path_model is not None:
            self.model = path_model
        else:
            self.model = body.get("model") if isinstance(body.get("model"), str) else DEFAULT_MODEL
        self.max_tokens = max_tokens_of(body, self.endpoint)
        d = dialect(self, script, body, self.endpoint, self.model, estimate_prompt_tokens(body, self.endpoint))
        at = req.t_request + script.headers_delay / 1000.0
        if self.endpoint == "anthropic-messages" and "max_tokens" not in body:
            self.outcome = "rejected"
            return await self.send_simple(400, d.error_body(400, "max_tokens: Field required"), at=at)
        if self.endpoint == "gemini" and method == "streamGenerateContent" and "alt=sse" not in req.query.split("&"):
            self.outcome = "rejected"
            return await self.send_simple(400, d.error_body(
                400, "this test upstream streams Gemini only as SSE: add ?alt=sse"), at=at)
        if script.no_answer:
            self.outcome = "no_answer"
            self.keep_alive = False
            await wait_client_gone(self.reader)
            self.end = time.monotonic()
            return
        if script.reject_stream_options and "stream_options" in body:
            self.outcome = "rejected"
            return await self.send_simple(400, d.error_body(
                400, "Unrecognized request argument supplied: stream_options", "invalid_request_error"), at=at)
        if script.status is not None:
            self.outcome = "status"
            extra = [("Retry-After", "1")] if script.status == 429 else []
            body = d.error_body(script.status) if script.error_body is None else script.error_body.encode()
            return await self.send_simple(script.status, body, extra=extra, at=at)
        if self.endpoint in ("ollama-chat", "ollama-generate"):
            streaming = body.get("stream") is not False       # Ollama streams unless told not to
        elif self.endpoint == "gemini":
            streaming = method == "streamGenerateContent"     # the method says, not the body
        else:
            streaming = body.get("stream") is True
        if not streaming:
            return await self.answer_whole(script, d)
        return await self.stream(script, d)

    def record(self) -> dict:
        h = self.req.headers
        return {"path": self.req.path, "spec": self.spec, "status": self.status,
                "t_request": self.req.t_request, "sends": self.sends, "first_byte": self.first_byte,
                "end": self.end, "outcome": self.outcome, "conn": self.conn.id, "seq": self.conn.seq,
                "method": self.req.method, "endpoint": self.endpoint, "api": self.api, "model": self.model,
                "chunks": self.chunks, "reasoning": self.reasoning, "tpc": self.tpc, "peer": self.conn.peer,
                "query": self.req.query, "auth": sorted(k for k in AUTH_HEADERS if k in h),
                "anthropic_version": h.get("anthropic-version"), "max_tokens": self.max_tokens,
                # How the request body was framed on the wire (a proxy may re-frame it).
                "content_length": h.get("content-length"), "transfer_encoding": h.get("transfer-encoding"),
                # A gateway's own headers as received (tests check what reached the wire).
                "gateway_headers": {k: v for k, v in h.items()
                                    if k.startswith(("x-portkey-", "helicone-"))}}


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
