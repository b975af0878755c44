"""Tests of the scriptable test upstream (upstream.py) and its test PKI script.

Standard library only:
    python3 -m unittest discover -s tests/upstream -p 'test_*.py'

Every test starts its own server on a free port as a subprocess and stops it with
SIGTERM at the end. Responses are read with raw sockets, so that each byte's
arrival time (time.monotonic() when the recv that delivered it returned) can be
compared with the script and with the server's log, which uses the same clock.
Send times taken from the server log must be within 3 ms of the script; arrival
times measured at the client socket within 10 ms (the machine may be busy).
"""

from __future__ import annotations

import bisect
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = os.path.join(HERE, "upstream.py")
MAKE_PKI = os.path.join(HERE, "make_test_pki.sh")
sys.path.insert(0, HERE)
import upstream  # noqa: E402  (for WORDS and the spec parser)

SERVER_TOL = 0.003   # send times from the server log vs the script
# Without SCHED_FIFO (no root / CAP_SYS_NICE), a busy machine wakes the server a
# scheduler tick (4 ms) late now and then: the server tolerance is wider there.
SERVER_TOL_NO_REALTIME = 0.010
CLIENT_TOL = 0.010   # arrival times at the client socket vs the script

CHAT_BODY = {"model": "probe-model", "stream": True,
             "messages": [{"role": "user", "content": "What is the capital of France?"}]}


# --------------------------------------------------------------------------- server process


class Server:
    def __init__(self, workdir: str, *extra: str):
        self.dir = tempfile.mkdtemp(dir=workdir)
        self.port_file = os.path.join(self.dir, "port")
        self.log_file = os.path.join(self.dir, "log.jsonl")
        self.err_path = os.path.join(self.dir, "stderr")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, UPSTREAM, "--port", "0", "--port-file", self.port_file,
             "--log-file", self.log_file, *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None:
                raise AssertionError(f"upstream exited with {self.proc.returncode}: {self.stderr()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"upstream did not write its port file: {self.stderr()}")
            time.sleep(0.02)
        with open(self.port_file) as f:
            self.port = int(f.read())
        self.realtime = "SCHED_FIFO" in self.stderr()
        self.tol = SERVER_TOL if self.realtime else SERVER_TOL_NO_REALTIME
        self.ctol = CLIENT_TOL if self.realtime else CLIENT_TOL + SERVER_TOL_NO_REALTIME - SERVER_TOL
        self.stopped = None
        self.rows_seen = 0

    def stderr(self) -> str:
        if not self.err.closed:
            self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds to exit)."""
        if self.stopped is None:
            t = time.monotonic()
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
            self.stopped = (rc, time.monotonic() - t)
            self.err.close()
        return self.stopped

    def log(self) -> list[dict]:
        if not os.path.exists(self.log_file):
            return []
        with open(self.log_file) as f:
            return [json.loads(line) for line in f if line.strip()]

    def next_row(self, timeout=5.0) -> dict:
        """The next log row not yet returned by next_row()."""
        rows = self.wait_log(self.rows_seen + 1, timeout)
        if len(rows) <= self.rows_seen:
            raise AssertionError(f"no log row #{self.rows_seen + 1}: {self.stderr()}")
        self.rows_seen += 1
        return rows[self.rows_seen - 1]

    def wait_log(self, n: int, timeout=5.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            rows = self.log()
            if len(rows) >= n or time.monotonic() > deadline:
                return rows
            time.sleep(0.01)


# --------------------------------------------------------------------------- raw HTTP client


class Response:
    def __init__(self):
        self.status = None
        self.headers: dict[str, str] = {}
        self.raw = bytearray()
        self.read_starts: list[int] = []    # raw offset where each recv's data starts
        self.read_times: list[float] = []   # monotonic time each recv returned
        self.body = bytearray()
        self.body_map: list[tuple[int, int]] = []  # (body offset, raw offset) of each body piece
        self.complete = False
        self.eof = False
        self.terminated = False  # chunked: the 0-size chunk was seen

    def read_ends(self) -> list[int]:
        return self.read_starts[1:] + [len(self.raw)]

    def time_of_raw(self, off: int) -> float:
        return self.read_times[bisect.bisect_right(self.read_starts, off) - 1]

    def raw_of_body(self, boff: int) -> int:
        i = bisect.bisect_right([b for b, _ in self.body_map], boff) - 1
        b, r = self.body_map[i]
        return r + (boff - b)

    def time_of_body(self, boff: int) -> float:
        return self.time_of_raw(self.raw_of_body(boff))

    def parse(self) -> None:
        end = self.raw.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.raw[:end].decode("latin-1").split("\r\n")
        self.status = int(head[0].split()[1])
        self.headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        pos = end + 4
        self.body = bytearray()
        self.body_map = []
        if "chunked" in self.headers.get("transfer-encoding", ""):
            while True:
                nl = self.raw.find(b"\r\n", pos)
                if nl < 0:
                    break
                size = int(self.raw[pos:nl].split(b";")[0], 16)
                if size == 0:
                    self.terminated = self.raw[nl + 2:nl + 4] == b"\r\n"
                    self.complete = self.terminated
                    break
                if nl + 2 + size + 2 > len(self.raw):
                    break
                self.body_map.append((len(self.body), nl + 2))
                self.body += self.raw[nl + 2:nl + 2 + size]
                assert self.raw[nl + 2 + size:nl + 4 + size] == b"\r\n", "bad chunk framing"
                pos = nl + 4 + size
        elif "content-length" in self.headers:
            n = int(self.headers["content-length"])
            self.body_map.append((0, pos))
            self.body += self.raw[pos:pos + n]
            self.complete = len(self.raw) - pos >= n
        else:
            self.body_map.append((0, pos))
            self.body += self.raw[pos:]
            self.complete = self.eof

    # SSE: events with the arrival time of the byte that completed them.
    def events(self) -> list[dict]:
        out, data, comments, pos, name = [], [], [], 0, None
        body = bytes(self.body)
        while True:
            nl = body.find(b"\n", pos)
            if nl < 0:
                break
            line = body[pos:nl].rstrip(b"\r").decode()
            if line == "":
                if data or comments:
                    out.append({"t": self.time_of_body(nl), "data": "\n".join(data) if data else None,
                                "comments": comments, "start": self.raw_of_body(ev_start),
                                "end": self.raw_of_body(nl), "event": name})
                data, comments, name = [], [], None
            else:
                if not data and not comments:
                    ev_start = pos
                if line.startswith(":"):
                    comments.append(line[1:].strip())
                elif line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
            pos = nl + 1
        return out


    # NDJSON: lines with the arrival time of their "\n".
    def lines(self) -> list[dict]:
        out, pos, body = [], 0, bytes(self.body)
        while True:
            nl = body.find(b"\n", pos)
            if nl < 0:
                break
            out.append({"t": self.time_of_body(nl), "data": body[pos:nl].rstrip(b"\r").decode(),
                        "start": self.raw_of_body(pos), "end": self.raw_of_body(nl)})
            pos = nl + 1
        return out


def connect(port: int, ctx: ssl.SSLContext | None = None, hostname="localhost", timeout=10.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ctx is not None:
        s = ctx.wrap_socket(s, server_hostname=hostname)
    return s


def send_request(sock, path: str, body=None, method="POST", headers=None) -> float:
    """Send one request; returns time.monotonic() right after it left."""
    payload = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "User-Agent: upstream-test"]
    hdrs = dict(headers or {})
    if method == "POST" and "Transfer-Encoding" not in hdrs:
        hdrs.setdefault("Content-Type", "application/json")
        hdrs["Content-Length"] = str(len(payload))
    lines += [f"{k}: {v}" for k, v in hdrs.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
    return time.monotonic()


def read_response(sock, timeout=10.0) -> Response:
    """Read one response to its end (chunked terminator, Content-Length, or EOF)."""
    r = Response()
    deadline = time.monotonic() + timeout
    while True:
        r.parse()
        if r.complete:
            return r
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"response not complete after {timeout}s: {bytes(r.raw[-300:])!r}")
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except (ConnectionResetError, ssl.SSLEOFError):
            data = b""
        t = time.monotonic()
        if not data:
            r.eof = True
            r.parse()
            return r
        r.read_starts.append(len(r.raw))
        r.read_times.append(t)
        r.raw += data


def request(port, path, body=None, **kw) -> tuple[Response, float]:
    with connect(port) as s:
        t = send_request(s, path, body, **kw)
        return read_response(s), t


def json_events(resp: Response) -> list[dict]:
    """Events with a parsed "json" (None for [DONE] and comments)."""
    out = []
    for ev in resp.events():
        if ev["data"] is not None and ev["data"] != "[DONE]":
            ev["json"] = json.loads(ev["data"])
        out.append(ev)
    return out


def content_of(ev: dict) -> str | None:
    j = ev.get("json")
    if not j or not j.get("choices"):
        return None
    ch = j["choices"][0]
    return ch["delta"].get("content") if "delta" in ch else ch.get("text")


def content_events(resp: Response) -> list[dict]:
    return [e for e in json_events(resp) if content_of(e)]


def scheduled(ttft, gap, chunks, stall=None) -> list[float]:
    out, t = [], ttft
    for i in range(chunks):
        if i:
            t += (stall or {}).get(i, gap)
        out.append(t / 1000.0)
    return out


# --------------------------------------------------------------------------- tests


class UpstreamTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="upstream-test-")
        self.servers: list[Server] = []

    def tearDown(self):
        try:
            for s in self.servers:
                rc, secs = s.stop()
                self.assertEqual(rc, 0, s.stderr())
                self.assertNotIn("Traceback", s.stderr())
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *extra) -> Server:
        s = Server(self.tmp, *extra)
        self.servers.append(s)
        return s

    def timed(self, check, attempts=3):
        """Run a timing check up to `attempts` times; it must pass once.

        A timing check asserts every send of one stream within SERVER_TOL of the
        script. On a machine busy compiling, a wake-up can be a few ms late now and
        then (host preemption, non-preemptible kernel sections), which says nothing
        about the schedule; a wrong schedule or a drift fails every attempt.
        """
        for i in range(attempts):
            try:
                return check()
            except AssertionError as e:
                if i == attempts - 1:
                    raise
                print(f"\n  timing attempt {i + 1} of {self.id()} missed: {e}; retrying", file=sys.stderr)

    def assert_near(self, actual, expected, tol, what=""):
        self.assertLessEqual(abs(actual - expected), tol,
                             f"{what}: {actual * 1000:.2f} ms vs scheduled {expected * 1000:.2f} ms "
                             f"(tolerance {tol * 1000:.0f} ms)")

    # ---- basics

    def test_healthz_and_bad_spec(self):
        srv = self.start()
        r, _ = request(srv.port, "/healthz", method="GET")
        self.assertEqual(r.status, 200)
        r, _ = request(srv.port, "/s/ttft=10,bogus=1/v1/chat/completions", CHAT_BODY)
        self.assertEqual(r.status, 400)
        msg = json.loads(r.body)["error"]["message"]
        self.assertIn("bogus", msg)
        for bad in ("stall=0:10", "chunks=5,stall=7:10", "ttft=abc", "finish=maybe", "ttft=1,ttft=2"):
            r, _ = request(srv.port, f"/s/{bad}/v1/chat/completions", CHAT_BODY)
            self.assertEqual(r.status, 400, bad)
            self.assertIn("error", json.loads(r.body))
        r, _ = request(srv.port, "/nope", CHAT_BODY)
        self.assertEqual(r.status, 404)

    def test_sse_framing_and_json(self):
        srv = self.start()
        body = dict(CHAT_BODY, stream_options={"include_usage": True})
        r, _ = request(srv.port, "/s/ttft=20,gap=5,chunks=8,role_first=1/v1/chat/completions", body)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "text/event-stream")
        self.assertEqual(r.headers["cache-control"], "no-cache")
        self.assertEqual(r.headers["transfer-encoding"], "chunked")
        self.assertTrue(r.terminated)
        self.assertTrue(bytes(r.body).endswith(b"data: [DONE]\n\n"))
        evs = json_events(r)
        self.assertTrue(all(e["data"] is not None for e in evs))
        self.assertEqual([e["data"] for e in evs][-1], "[DONE]")
        js = [e["json"] for e in evs[:-1]]
        self.assertEqual(len(js), 1 + 8 + 1 + 1)  # role, content, finish, usage
        self.assertEqual(len({j["id"] for j in js}), 1)
        for j in js:
            self.assertEqual(j["object"], "chat.completion.chunk")
            self.assertEqual(j["model"], "probe-model")
            self.assertIsInstance(j["created"], int)
            self.assertTrue(j["id"].startswith("chatcmpl-"))
        self.assertEqual(js[0]["choices"], [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                             "logprobs": None, "finish_reason": None}])
        words = [j["choices"][0]["delta"]["content"] for j in js[1:9]]
        for j in js[1:9]:
            self.assertIsNone(j["choices"][0]["finish_reason"])
            self.assertEqual(j["choices"][0]["index"], 0)
        self.assertEqual("".join(words), " ".join(upstream.WORDS[:8]))
        self.assertEqual(js[9]["choices"][0]["delta"], {})
        self.assertEqual(js[9]["choices"][0]["finish_reason"], "stop")
        self.assertEqual(js[10]["choices"], [])
        u = js[10]["usage"]
        self.assertEqual(u["completion_tokens"], 8)
        self.assertGreater(u["prompt_tokens"], 0)
        self.assertEqual(u["total_tokens"], u["prompt_tokens"] + 8)

    def test_completions_endpoint_usage_switch(self):
        srv = self.start()
        body = {"model": "m1", "prompt": "Say hi", "stream": True}
        r, _ = request(srv.port, "/s/ttft=5,gap=2,chunks=4,finish=length/v1/completions", body)
        js = [e["json"] for e in json_events(r) if e.get("json")]
        self.assertEqual(len(js), 5)  # no usage event: not asked for
        for j in js:
            self.assertEqual(j["object"], "text_completion")
            self.assertEqual(j["model"], "m1")
        self.assertEqual("".join(j["choices"][0]["text"] for j in js[:4]), " ".join(upstream.WORDS[:4]))
        self.assertEqual(js[4]["choices"][0], {"text": "", "index": 0, "logprobs": None, "finish_reason": "length"})
        r, _ = request(srv.port, "/s/ttft=5,gap=2,chunks=4,usage=1/v1/completions", body)
        js = [e["json"] for e in json_events(r) if e.get("json")]
        self.assertEqual(js[-1]["usage"]["completion_tokens"], 4)
        body["stream_options"] = {"include_usage": True}
        r, _ = request(srv.port, "/s/ttft=5,gap=2,chunks=4,usage=0/v1/completions", body)
        self.assertFalse(any("usage" in e.get("json", {}) for e in json_events(r)))
        # The default script (no prefix) streams 40 chunks; "/v1" may be left out.
        r, _ = request(srv.port, "/chat/completions", CHAT_BODY)
        self.assertEqual(len(content_events(r)), 40)

    def test_tokens_per_chunk_openai(self):
        """tpc=4: each event carries 4 words; usage counts 4 x chunks tokens, not events."""
        srv = self.start()
        body = dict(CHAT_BODY, stream_options={"include_usage": True})
        r, _ = request(srv.port, "/s/ttft=5,gap=2,chunks=6,tpc=4,reasoning=2/v1/chat/completions", body)
        js = [e["json"] for e in json_events(r) if e.get("json")]
        deltas = [j["choices"][0]["delta"] for j in js if j["choices"]]
        reasoning = [d["reasoning_content"] for d in deltas if d.get("reasoning_content")]
        content = [d["content"] for d in deltas if d.get("content")]
        self.assertEqual((len(reasoning), len(content)), (2, 4))  # events stay per chunk
        # Every event is 4 words, and the text goes on where the last chunk ended.
        self.assertTrue(all(len(t.split()) == 4 for t in reasoning + content), reasoning + content)
        self.assertEqual("".join(reasoning), " ".join(upstream.WORDS[0:8]))
        self.assertEqual("".join(content), " ".join(upstream.WORDS[8:24]))
        u = js[-1]["usage"]
        self.assertEqual((u["completion_tokens"], u["total_tokens"]), (24, u["prompt_tokens"] + 24))
        self.assertEqual(srv.next_row()["tpc"], 4)
        # Completions, and the non-streamed answer: the same words and count.
        r, _ = request(srv.port, "/s/ttft=2,gap=1,chunks=3,tpc=3,usage=1/v1/completions",
                       {"model": "m", "prompt": "Hi", "stream": True})
        js = [e["json"] for e in json_events(r) if e.get("json")]
        self.assertEqual("".join(j["choices"][0]["text"] for j in js if j["choices"]),
                         " ".join(upstream.WORDS[0:9]))
        self.assertEqual(js[-1]["usage"]["completion_tokens"], 9)
        r, _ = request(srv.port, "/s/ttft=2,gap=1,chunks=3,tpc=3/v1/chat/completions",
                       dict(CHAT_BODY, stream=False))
        whole = json.loads(r.body)
        self.assertEqual(whole["choices"][0]["message"]["content"], " ".join(upstream.WORDS[0:9]))
        self.assertEqual(whole["usage"]["completion_tokens"], 9)
        # The default is one token per event; tpc is bounded.
        r, _ = request(srv.port, "/s/ttft=2,gap=1,chunks=3/v1/chat/completions", body)
        self.assertEqual([e["json"] for e in json_events(r) if e.get("json")][-1]["usage"]["completion_tokens"], 3)
        for bad in ("tpc=0", "tpc=65", "tpc=two"):
            r, _ = request(srv.port, f"/s/{bad}/v1/chat/completions", CHAT_BODY)
            self.assertEqual(r.status, 400, bad)
            self.assertIn("tpc", json.loads(r.body)["error"]["message"])

    # ---- timing

    def test_scripted_timing(self):
        srv = self.start()
        sched = scheduled(150, 20, 10, {5: 300})

        def check():
            with connect(srv.port) as s:
                t_sent = send_request(s, "/s/ttft=150,gap=20,chunks=10,stall=5:300/v1/chat/completions",
                                      CHAT_BODY)
                r = read_response(s)
            row = srv.next_row()
            t0 = row["t_request"]
            self.assertLessEqual(t_sent - 0.001, t0)
            self.assertEqual(len(row["sends"]), 10)
            for i, (sent, want) in enumerate(zip(row["sends"], sched)):
                self.assert_near(sent - t0, want, srv.tol, f"server send of chunk {i}")
            evs = content_events(r)
            self.assertEqual(len(evs), 10)
            for i, (ev, want) in enumerate(zip(evs, sched)):
                self.assert_near(ev["t"] - t0, want, srv.ctol, f"client arrival of chunk {i}")
            gaps = [b["t"] - a["t"] for a, b in zip(evs, evs[1:])]
            self.assert_near(gaps[4], 0.300, srv.ctol, "stall gap at the client")
        self.timed(check)

    def test_jitter_tail_headers_delay(self):
        srv = self.start()
        expect = upstream.parse_spec("ttft=80,gap=20,jitter=5,chunks=20,seed=7").content_offsets(
            upstream.random.Random(7))

        def check():
            r, _ = request(srv.port, "/s/ttft=80,headers_delay=50,gap=20,jitter=5,chunks=20,seed=7,tail=100"
                                     "/v1/chat/completions", CHAT_BODY)
            self.assertEqual(json_events(r)[-1]["data"], "[DONE]")
            row = srv.next_row()
            t0, sends = row["t_request"], row["sends"]
            self.assert_near(row["first_byte"] - t0, 0.050, srv.tol, "headers")
            self.assert_near(sends[0] - t0, 0.080, srv.tol, "ttft includes headers_delay")
            # The same seed gives the same schedule: gaps of 20 +/- 5 ms.
            for i, (s, want) in enumerate(zip(sends, expect)):
                self.assert_near(s - t0, want, srv.tol, f"jittered chunk {i}")
            self.assert_near(row["end"] - sends[-1], 0.100, srv.tol, "tail")
        gaps = [b - a for a, b in zip(expect, expect[1:])]
        self.assertTrue(all(0.015 <= g <= 0.025 for g in gaps), gaps)
        self.assertGreater(max(gaps) - min(gaps), 0.002)  # it does jitter
        self.timed(check)

    def test_per_write_coalescing(self):
        srv = self.start()
        sched = scheduled(30, 30, 8)
        groups = [[0, 1, 2], [3, 4, 5], [6, 7]]

        def check():
            r, _ = request(srv.port, "/s/ttft=30,gap=30,chunks=8,per_write=3/v1/chat/completions", CHAT_BODY)
            row = srv.next_row()
            t0, sends = row["t_request"], row["sends"]
            for g in groups:
                self.assertEqual(len({sends[i] for i in g}), 1, f"group {g} written at once")
                self.assert_near(sends[g[0]] - t0, sched[g[-1]], srv.tol, f"group {g}")
            evs = content_events(r)
            self.assertEqual(len(evs), 8)
            for g in groups:
                self.assertEqual(len({evs[i]["t"] for i in g}), 1, f"group {g} read at once")
                self.assert_near(evs[g[0]]["t"] - t0, sched[g[-1]], srv.ctol, f"group {g} arrival")
        self.timed(check)

    def test_split_writes(self):
        srv = self.start()
        sched = scheduled(30, 25, 6)

        def check():
            r, _ = request(srv.port, "/s/ttft=30,gap=25,chunks=6,split=1/v1/chat/completions", CHAT_BODY)
            row = srv.next_row()
            evs = content_events(r)
            self.assertEqual(len(evs), 6)  # every event still reassembles to valid JSON
            self.assertEqual(json_events(r)[-1]["data"], "[DONE]")
            for i, (s, want) in enumerate(zip(row["sends"], sched)):
                self.assert_near(s - row["t_request"], want, srv.tol, f"second half of chunk {i}")
            ends = r.read_ends()
            split_seen = 0
            for ev in evs:
                payload_start = ev["start"] + len("data: ")
                split_seen += any(payload_start < e < ev["end"] for e in ends)
            # Each event leaves in two writes 1 ms apart; a busy client may read both at once.
            self.assertGreaterEqual(split_seen, 3, "reads ending inside an event's JSON")
        self.timed(check)

    # ---- status and faults

    def test_status_429_then_reuse(self):
        srv = self.start()
        with connect(srv.port) as s:
            send_request(s, "/s/status=429/v1/chat/completions", CHAT_BODY)
            r = read_response(s)
            self.assertEqual(r.status, 429)
            self.assertEqual(r.headers["retry-after"], "1")
            self.assertEqual(r.headers["content-type"], "application/json")
            err = json.loads(r.body)["error"]
            self.assertTrue(err["message"])
            self.assertEqual(err["code"], "rate_limit_exceeded")
            send_request(s, "/s/status=503/v1/chat/completions", CHAT_BODY)
            r = read_response(s)
            self.assertEqual(r.status, 503)
            self.assertEqual(json.loads(r.body)["error"]["type"], "server_error")
        rows = srv.wait_log(2)
        self.assertEqual([x["status"] for x in rows], [429, 503])
        self.assertEqual(rows[0]["conn"], rows[1]["conn"])

    def test_close_after(self):
        srv = self.start()

        def check():
            r, _ = request(srv.port, "/s/ttft=20,gap=10,chunks=10,close_after=3/v1/chat/completions", CHAT_BODY)
            self.assertTrue(r.eof)
            self.assertFalse(r.terminated)
            self.assertEqual(len(content_events(r)), 3)
            self.assertNotIn(b"[DONE]", r.body)
            self.assertFalse(any(e["json"]["choices"][0]["finish_reason"] for e in json_events(r)))
            row = srv.next_row()
            self.assertEqual(row["outcome"], "closed")
            self.assertEqual(len(row["sends"]), 3)
            # The close comes when chunk 3 was due.
            self.assert_near(row["end"] - row["t_request"], scheduled(20, 10, 10)[3], srv.tol, "close")
        self.timed(check)

    def test_no_answer(self):
        srv = self.start()
        with connect(srv.port) as s:
            t = send_request(s, "/s/no_answer=1/v1/chat/completions", CHAT_BODY)
            s.settimeout(0.3)
            with self.assertRaises(socket.timeout):
                data = s.recv(1)
                self.fail(f"got {data!r}")
            self.assertGreaterEqual(time.monotonic() - t, 0.3)
        row = srv.wait_log(1)[0]
        self.assertEqual(row["outcome"], "no_answer")
        self.assertIsNone(row["status"])
        self.assertIsNone(row["first_byte"])

    def test_hang_after(self):
        srv = self.start()
        with connect(srv.port) as s:
            send_request(s, "/s/ttft=10,gap=10,chunks=10,hang_after=2,keepalive=20/v1/chat/completions", CHAT_BODY)
            r = Response()
            end = time.monotonic() + 0.4
            while time.monotonic() < end:
                s.settimeout(max(0.001, end - time.monotonic()))
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    break
                self.assertTrue(data, "server closed a hanging stream")
                r.read_starts.append(len(r.raw))
                r.read_times.append(time.monotonic())
                r.raw += data
            r.parse()
            self.assertFalse(r.complete)
            self.assertEqual(len(content_events(r)), 2)
            self.assertLess(r.read_times[-1] - r.read_times[0], 0.1)  # hangs send no keep-alives either
        row = srv.wait_log(1)[0]
        self.assertEqual(row["outcome"], "hang")

    def test_client_leaving_mid_stall_is_noticed(self):
        srv = self.start()
        with connect(srv.port) as s:
            send_request(s, "/s/ttft=10,gap=10,chunks=4,stall=2:5000/v1/chat/completions", CHAT_BODY)
            s.settimeout(5)
            got = b""
            while got.count(b'"content"') < 2:
                got += s.recv(65536)
            t_left = time.monotonic()
        row = srv.next_row()
        self.assertEqual(row["outcome"], "client_gone")
        self.assertEqual(len(row["sends"]), 2)
        self.assertLess(row["end"] - t_left, 0.5)

    def test_http10_client_gets_close_delimited_stream(self):
        srv = self.start()
        with connect(srv.port) as s:
            s.sendall(b"POST /s/ttft=5,chunks=3/v1/chat/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(json.dumps(CHAT_BODY)), json.dumps(CHAT_BODY).encode()))
            r = read_response(s)
        self.assertTrue(r.eof)
        self.assertNotIn("transfer-encoding", r.headers)
        self.assertEqual(len(content_events(r)), 3)
        self.assertEqual(r.events()[-1]["data"], "[DONE]")

    def test_error_bad_json_no_done_crlf_close_framing(self):
        srv = self.start()
        r, _ = request(srv.port, "/s/ttft=5,gap=5,chunks=6,error_after=2/v1/chat/completions", CHAT_BODY)
        evs = r.events()
        self.assertTrue(r.terminated)
        self.assertEqual(json.loads(evs[-1]["data"]),
                         {"error": {"message": "upstream overloaded", "type": "server_error"}})
        self.assertEqual(len([e for e in evs if '"content"' in e["data"]]), 2)
        self.assertNotIn(b"[DONE]", r.body)

        r, _ = request(srv.port, "/s/ttft=5,gap=5,chunks=4,bad_json_after=1/v1/chat/completions", CHAT_BODY)
        datas = [e["data"] for e in r.events()]
        self.assertEqual(datas[1], "{not json")
        self.assertEqual(len(datas), 4 + 1 + 1 + 1)
        self.assertEqual(datas[-1], "[DONE]")

        r, _ = request(srv.port, "/s/ttft=5,gap=5,chunks=3,no_done=1,crlf=1,content_type=application/json"
                                 "/v1/chat/completions", CHAT_BODY)
        self.assertEqual(r.headers["content-type"], "application/json")
        self.assertTrue(r.terminated)
        self.assertNotIn(b"[DONE]", r.body)
        self.assertNotIn(b"\n\n", bytes(r.body).replace(b"\r\n", b""))
        self.assertEqual(bytes(r.body).count(b"\r\n\r\n"), 4)
        self.assertEqual(len(content_events(r)), 3)

        r, _ = request(srv.port, "/s/ttft=5,gap=5,chunks=3,framing=close/v1/chat/completions", CHAT_BODY)
        self.assertNotIn("transfer-encoding", r.headers)
        self.assertNotIn("content-length", r.headers)
        self.assertTrue(r.eof)
        self.assertEqual(r.events()[-1]["data"], "[DONE]")
        self.assertEqual(len(content_events(r)), 3)

    def test_reasoning_keepalive_reject_stream_options(self):
        srv = self.start()
        r, _ = request(srv.port, "/s/ttft=100,gap=5,chunks=5,reasoning=2,keepalive=20/v1/chat/completions",
                       CHAT_BODY)
        evs = json_events(r)
        comments = [e for e in evs if e["data"] is None]
        self.assertIn("keep-alive", comments[0]["comments"])
        self.assertGreaterEqual(len(comments), 3)  # ~every 20 ms during the 100 ms ttft
        deltas = [e["json"]["choices"][0]["delta"] for e in evs if e.get("json")]
        self.assertEqual(deltas[0], {"content": None, "reasoning_content": upstream.WORDS[0]})
        self.assertEqual(deltas[1]["reasoning_content"], " " + upstream.WORDS[1])
        self.assertEqual(deltas[2], {"content": upstream.WORDS[2]})
        self.assertEqual(srv.wait_log(1)[0]["reasoning"], 2)

        body = dict(CHAT_BODY, stream_options={"include_usage": True})
        r, _ = request(srv.port, "/s/reject_stream_options=1,chunks=2,ttft=1/v1/chat/completions", body)
        self.assertEqual(r.status, 400)
        self.assertEqual(json.loads(r.body)["error"]["message"],
                         "Unrecognized request argument supplied: stream_options")
        r, _ = request(srv.port, "/s/reject_stream_options=1,chunks=2,ttft=1/v1/chat/completions", CHAT_BODY)
        self.assertEqual(r.status, 200)
        self.assertEqual(len(content_events(r)), 2)

    # ---- connections

    def test_keep_alive_reuse(self):
        srv = self.start()
        with connect(srv.port) as s:
            for _ in range(2):
                send_request(s, "/s/ttft=5,gap=2,chunks=3/v1/chat/completions", CHAT_BODY)
                r = read_response(s)
                self.assertTrue(r.terminated)
                self.assertFalse(r.eof)
                self.assertEqual(len(content_events(r)), 3)
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        conn.request("POST", "/s/ttft=5,gap=2,chunks=3/v1/completions", json.dumps(CHAT_BODY))
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertIn(b"[DONE]", resp.read())
        sock = conn.sock
        conn.request("GET", "/healthz")
        self.assertEqual(conn.getresponse().read(), b"ok\n")
        self.assertIs(conn.sock, sock)
        conn.close()
        rows = srv.wait_log(4)
        self.assertEqual([(r["conn"], r["seq"]) for r in rows], [(1, 1), (1, 2), (2, 1), (2, 2)])
        # Connection: close is honoured.
        with connect(srv.port) as s:
            send_request(s, "/s/ttft=5,chunks=2/v1/chat/completions", CHAT_BODY, headers={"Connection": "close"})
            r = read_response(s)
            self.assertTrue(r.terminated)
            s.settimeout(2)
            self.assertEqual(s.recv(10), b"")

    def test_chunked_request_body(self):
        srv = self.start()
        body = json.dumps(dict(CHAT_BODY, model="chunky")).encode()
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:10], body[10:])) + b"0\r\n\r\n"
        r, _ = request(srv.port, "/s/ttft=5,chunks=2/v1/chat/completions", chunked,
                       headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"})
        self.assertEqual(r.status, 200)
        self.assertEqual(json_events(r)[0]["json"]["model"], "chunky")

    def test_log_file(self):
        srv = self.start()

        def check():
            with connect(srv.port) as s:
                t_sent = send_request(s, "/s/ttft=40,gap=10,chunks=4,tail=20/v1/chat/completions", CHAT_BODY)
                r = read_response(s)
            row = srv.next_row()
            for k in ("path", "spec", "status", "t_request", "sends", "first_byte", "end"):
                self.assertIn(k, row)
            self.assertEqual(row["path"], "/s/ttft=40,gap=10,chunks=4,tail=20/v1/chat/completions")
            self.assertEqual(row["spec"], "ttft=40,gap=10,chunks=4,tail=20")
            self.assertEqual(row["status"], 200)
            self.assertEqual(row["outcome"], "done")
            # The server's clock is this process's time.monotonic(). A write's time is
            # taken when the write returns, which may be just after the client read it.
            self.assertLessEqual(t_sent - 0.001, row["t_request"])
            self.assertLessEqual(row["t_request"], row["first_byte"])
            self.assertLessEqual(row["first_byte"], r.read_times[0] + srv.ctol)
            self.assertLess(row["first_byte"], row["sends"][0])
            self.assertEqual(row["sends"], sorted(row["sends"]))
            for i, (sent, want) in enumerate(zip(row["sends"], scheduled(40, 10, 4))):
                self.assert_near(sent - row["t_request"], want, srv.tol, f"chunk {i}")
            self.assert_near(row["end"] - row["sends"][-1], 0.020, srv.tol, "tail")
            self.assertLessEqual(row["end"], r.read_times[-1] + srv.ctol)
        self.timed(check)
        with open(srv.log_file) as f:
            text = f.read()
        self.assertTrue(text.endswith("\n"))
        self.assertEqual(len(text.splitlines()), srv.rows_seen)

    def test_sigterm_with_open_streams(self):
        srv = self.start()
        s1 = connect(srv.port)
        s2 = connect(srv.port)
        send_request(s1, "/s/ttft=5,chunks=5,hang_after=1/v1/chat/completions", CHAT_BODY)
        send_request(s2, "/s/ttft=5000/v1/chat/completions", CHAT_BODY)
        s1.settimeout(5)
        self.assertTrue(s1.recv(100))
        time.sleep(0.05)
        rc, secs = srv.stop()
        self.assertEqual(rc, 0)
        self.assertLess(secs, 1.0)
        self.assertFalse(os.path.exists(srv.port_file))
        s1.close()
        s2.close()


# --------------------------------------------------------------------------- dialects

PROMPT = "What is the capital of France?"
# api -> (path after the /s/<spec> prefix, streaming request body)
DIALECT_REQUESTS = {
    "anthropic-messages": ("/v1/messages", {"model": "claude-test", "max_tokens": 64, "stream": True,
                                            "messages": [{"role": "user", "content": PROMPT}]}),
    "openai-responses": ("/v1/responses", {"model": "gpt-test", "input": PROMPT, "max_output_tokens": 64,
                                           "stream": True}),
    "ollama-chat": ("/api/chat", {"model": "llama-test", "messages": [{"role": "user", "content": PROMPT}],
                                  "options": {"num_predict": 64, "temperature": 0}}),
    "ollama-generate": ("/api/generate", {"model": "llama-test", "prompt": PROMPT,
                                          "options": {"num_predict": 64, "temperature": 0}}),
    "gemini": ("/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
               {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
                "generationConfig": {"maxOutputTokens": 64}}),
}
NDJSON_APIS = ("ollama-chat", "ollama-generate")
# api -> the stop reason the end marker carries for finish=stop and finish=length
STOP_REASONS = {
    "anthropic-messages": ("end_turn", "max_tokens"),
    "openai-responses": ("completed", "max_output_tokens"),
    "ollama-chat": ("stop", "length"),
    "ollama-generate": ("stop", "length"),
    "gemini": ("STOP", "MAX_TOKENS"),
}
ERROR_EVENTS = {
    "anthropic-messages": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    "gemini": {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
}


def dialect_request(port, api, spec, body=None, sock=None, **kw):
    path, default = DIALECT_REQUESTS[api]
    url = f"/s/{spec}{path}"
    if sock is not None:
        send_request(sock, url, body or default, **kw)
        return read_response(sock)
    return request(port, url, body or default, **kw)[0]


def classify(api: str, resp: Response) -> dict:
    """Decode a dialect's stream: its items (kind content/reasoning/other/end/error/bad), and the stop reason.

    Checks the invariants of each dialect on the way (event name = JSON type, sequence numbers).
    """
    items, stop, seqs = [], None, []
    raw = resp.lines() if api in NDJSON_APIS else [e for e in resp.events() if e["data"] is not None]
    for ev in raw:
        try:
            j = json.loads(ev["data"])
        except ValueError:
            items.append(dict(ev, kind="bad"))
            continue
        kind, text = "other", None
        if api == "anthropic-messages":
            name = ev["event"]
            assert name == j["type"], (name, j)
            if name == "content_block_delta":
                d = j["delta"]
                if d["type"] == "text_delta" and d["text"]:
                    kind, text = "content", d["text"]
                elif d["type"] == "thinking_delta" and d["thinking"]:
                    kind, text = "reasoning", d["thinking"]
            elif name == "message_delta":
                stop = j["delta"]["stop_reason"]
            elif name == "message_stop":
                kind = "end"
            elif name == "error":
                kind = "error"
        elif api == "openai-responses":
            name = ev["event"]
            assert name == j["type"], (name, j)
            seqs.append(j["sequence_number"])
            if name == "response.output_text.delta" and j["delta"]:
                kind, text = "content", j["delta"]
            elif name == "response.reasoning_summary_text.delta" and j["delta"]:
                kind, text = "reasoning", j["delta"]
            elif name in ("response.completed", "response.incomplete"):
                kind = "end"
                r = j["response"]
                stop = r["incomplete_details"]["reason"] if name == "response.incomplete" else r["status"]
            elif name == "error":
                kind = "error"
        elif api in NDJSON_APIS:
            if "error" in j:
                kind = "error"
            elif j["done"]:
                kind, stop = "end", j["done_reason"]
            else:
                src = j["message"] if api == "ollama-chat" else j
                key = "content" if api == "ollama-chat" else "response"
                if src[key]:
                    kind, text = "content", src[key]
                elif src.get("thinking"):
                    kind, text = "reasoning", src["thinking"]
        else:  # gemini
            assert ev["event"] is None, ev
            if "error" in j:
                kind = "error"
            else:
                cand = j["candidates"][0]
                for part in cand["content"]["parts"]:
                    if part.get("text"):
                        kind, text = ("reasoning" if part.get("thought") else "content"), part["text"]
                if "finishReason" in cand:
                    kind, stop = "end", cand["finishReason"]
        items.append(dict(ev, kind=kind, json=j, text=text))
    if seqs:
        assert seqs == list(range(len(seqs))), seqs
    return {"items": items, "stop": stop, "by": lambda k: [i for i in items if i["kind"] == k]}


class DialectTest(unittest.TestCase):
    """Every dialect of issue 8 with the same scripts; one server for the class."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="upstream-dialect-test-")
        cls.srv = Server(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        try:
            rc, _ = cls.srv.stop()
            assert rc == 0, cls.srv.stderr()
            assert "Traceback" not in cls.srv.stderr(), cls.srv.stderr()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    timed = UpstreamTest.timed
    assert_near = UpstreamTest.assert_near

    def setUp(self):
        self.srv.rows_seen = len(self.srv.log())  # rows of earlier tests are done with

    def row(self, api: str, spec: str | None = None) -> dict:
        """The next log row of this dialect (and spec): rows a failed subtest, or a
        check that needs no row, left unread are skipped. Waits for it to be written."""
        while True:
            row = self.srv.next_row()
            if row["endpoint"] == api and (spec is None or row["spec"] == spec):
                return row

    def test_stream_shapes(self):
        srv = self.srv
        for api in DIALECT_REQUESTS:
            with self.subTest(api=api):
                r = dialect_request(srv.port, api, "ttft=5,gap=2,chunks=6,reasoning=2")
                self.assertEqual(r.status, 200)
                self.assertTrue(r.terminated)
                s = classify(api, r)
                self.assertEqual([i["text"] for i in s["by"]("reasoning")], [upstream.WORDS[0], " " + upstream.WORDS[1]])
                self.assertEqual("".join(i["text"] for i in s["by"]("content")), " ".join(upstream.WORDS[2:6]))
                self.assertEqual(s["stop"], STOP_REASONS[api][0])
                self.assertEqual(len(s["by"]("end")), 1)
                self.assertIs(s["items"][-1]["kind"], "end")
                self.assertEqual(s["by"]("error") + s["by"]("bad"), [])
                # Reasoning chunks come first, then content.
                kinds = [i["kind"] for i in s["items"] if i["kind"] in ("content", "reasoning")]
                self.assertEqual(kinds, ["reasoning"] * 2 + ["content"] * 4)
                ctype = r.headers["content-type"]
                body = bytes(r.body)
                if api in NDJSON_APIS:
                    self.assertEqual(ctype, "application/x-ndjson")
                    self.assertEqual(len(s["items"]), 7)   # 6 chunk lines + the done line
                    self.assertNotIn(b"\r", body)
                    last = s["items"][-1]["json"]
                    self.assertEqual((last["prompt_eval_count"] > 0, last["eval_count"]), (True, 6))
                    for k in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
                        self.assertIsInstance(last[k], int)
                    # Derived from the script: eval = 5 gaps of 2 ms; prompt eval + load = ttft.
                    self.assertEqual(last["eval_duration"], 10_000_000)
                    self.assertEqual(last["load_duration"] + last["prompt_eval_duration"], 5_000_000)
                    self.assertEqual(last["total_duration"], 15_000_000)
                    self.assertTrue(all(i["json"]["model"] == "llama-test" for i in s["items"]))
                else:
                    self.assertTrue(ctype.startswith("text/event-stream"), ctype)
                    self.assertNotIn(b"[DONE]", body)
                if api == "gemini":
                    self.assertEqual(body.count(b"\r\n\r\n"), 7)
                    self.assertNotIn(b"\n", body.replace(b"\r\n", b""))
                    u = s["items"][-1]["json"]["usageMetadata"]
                    self.assertEqual((u["candidatesTokenCount"], u["thoughtsTokenCount"]), (4, 2))
                    self.assertEqual(u["totalTokenCount"], u["promptTokenCount"] + 6)
                    self.assertEqual(s["items"][0]["json"]["modelVersion"], "gemini-test")
                if api == "anthropic-messages":
                    names = [i["event"] for i in s["items"]]
                    self.assertEqual(names[:3], ["message_start", "content_block_start", "ping"])
                    self.assertEqual(s["items"][1]["json"]["content_block"]["type"], "thinking")
                    self.assertGreater(s["items"][0]["json"]["message"]["usage"]["input_tokens"], 0)
                    # Thinking block 0 closes with a signature, the text is block 1.
                    i = names.index("content_block_stop")
                    self.assertEqual(s["items"][i - 1]["json"]["delta"]["type"], "signature_delta")
                    self.assertEqual(s["items"][i + 1]["json"]["content_block"], {"type": "text", "text": ""})
                    self.assertTrue(all(c["json"]["index"] == 1 for c in s["by"]("content")))
                    self.assertEqual(names[-3:], ["content_block_stop", "message_delta", "message_stop"])
                    self.assertEqual(s["items"][-2]["json"]["usage"]["output_tokens"], 6)
                if api == "openai-responses":
                    names = [i["event"] for i in s["items"]]
                    self.assertEqual(names[:4], ["response.created", "response.in_progress",
                                                 "response.output_item.added",
                                                 "response.reasoning_summary_part.added"])
                    self.assertEqual(names[-4:], ["response.output_text.done", "response.content_part.done",
                                                  "response.output_item.done", "response.completed"])
                    self.assertTrue(all(c["json"]["output_index"] == 1 for c in s["by"]("content")))
                    resp = s["items"][-1]["json"]["response"]
                    self.assertEqual([o["type"] for o in resp["output"]], ["reasoning", "message"])
                    u = resp["usage"]
                    self.assertEqual((u["output_tokens"], u["total_tokens"]), (6, u["input_tokens"] + 6))
                row = self.row(api)
                self.assertEqual((row["endpoint"], row["api"], row["outcome"]), (api, api, "done"))
                self.assertEqual((row["chunks"], row["reasoning"], len(row["sends"])), (6, 2, 6))
                self.assertEqual(row["max_tokens"], 64)

    def test_tokens_per_chunk(self):
        """tpc=3 in every dialect: 3 words an event, usage counting tokens (reasoning too)."""
        srv = self.srv
        for api in DIALECT_REQUESTS:
            with self.subTest(api=api):
                r = dialect_request(srv.port, api, "ttft=5,gap=2,chunks=5,reasoning=1,tpc=3")
                s = classify(api, r)
                content, reasoning = s["by"]("content"), s["by"]("reasoning")
                self.assertEqual((len(reasoning), len(content)), (1, 4))
                self.assertEqual(reasoning[0]["text"], " ".join(upstream.WORDS[0:3]))
                self.assertEqual("".join(i["text"] for i in content), " ".join(upstream.WORDS[3:15]))
                self.assertTrue(all(len(i["text"].split()) == 3 for i in content))
                last = s["items"][-1]["json"]
                if api == "anthropic-messages":
                    self.assertEqual(s["items"][-2]["json"]["usage"]["output_tokens"], 15)
                if api == "openai-responses":
                    u = last["response"]["usage"]
                    self.assertEqual((u["output_tokens"], u["output_tokens_details"]["reasoning_tokens"]), (15, 3))
                if api in NDJSON_APIS:
                    self.assertEqual(last["eval_count"], 15)
                if api == "gemini":
                    u = last["usageMetadata"]
                    self.assertEqual((u["candidatesTokenCount"], u["thoughtsTokenCount"]), (12, 3))
                    self.assertEqual(u["totalTokenCount"], u["promptTokenCount"] + 15)
                row = self.row(api)
                self.assertEqual((row["chunks"], row["tpc"], len(row["sends"])), (5, 3, 5))

    def test_stall_timing(self):
        srv = self.srv
        sched = scheduled(60, 15, 8, {4: 200})
        for api in DIALECT_REQUESTS:
            def check():
                with connect(srv.port) as s:
                    t_sent = send_request(s, f"/s/ttft=60,gap=15,chunks=8,stall=4:200{DIALECT_REQUESTS[api][0]}",
                                          DIALECT_REQUESTS[api][1])
                    r = read_response(s)
                row = self.row(api)
                t0 = row["t_request"]
                self.assertLessEqual(t_sent - 0.001, t0)
                self.assertEqual(len(row["sends"]), 8)
                for i, (sent, want) in enumerate(zip(row["sends"], sched)):
                    self.assert_near(sent - t0, want, srv.tol, f"{api}: server send of chunk {i}")
                evs = classify(api, r)["by"]("content")
                self.assertEqual(len(evs), 8)
                for i, (ev, want) in enumerate(zip(evs, sched)):
                    self.assert_near(ev["t"] - t0, want, srv.ctol, f"{api}: client arrival of chunk {i}")
                gaps = [b["t"] - a["t"] for a, b in zip(evs, evs[1:])]
                self.assertEqual(len(gaps), 7)
                self.assert_near(gaps[3], 0.200, srv.ctol, f"{api}: stall gap at the client")
                self.assertEqual(sum(g >= 0.1 for g in gaps), 1)
            with self.subTest(api=api):
                self.timed(check)

    def test_error_after_and_reuse(self):
        srv = self.srv
        for api in DIALECT_REQUESTS:
            with self.subTest(api=api), connect(srv.port) as sock:
                r = dialect_request(srv.port, api, "ttft=5,gap=3,chunks=6,error_after=2", sock=sock)
                self.assertTrue(r.terminated)
                s = classify(api, r)
                self.assertEqual(len(s["by"]("content")), 2)
                self.assertEqual(s["items"][-1]["kind"], "error")
                self.assertEqual(s["by"]("end"), [])
                err = s["items"][-1]
                if api in ERROR_EVENTS:
                    self.assertEqual(err["json"], ERROR_EVENTS[api])
                if api == "anthropic-messages":
                    self.assertEqual(err["event"], "error")
                if api == "openai-responses":
                    self.assertEqual(err["event"], "error")
                    self.assertEqual((err["json"]["type"], err["json"]["code"]), ("error", "server_error"))
                    self.assertTrue(err["json"]["message"])
                if api in NDJSON_APIS:
                    self.assertEqual(list(err["json"]), ["error"])
                    self.assertIsInstance(err["json"]["error"], str)
                row = self.row(api)
                self.assertEqual(row["outcome"], "error_event")
                # The connection stays usable.
                r = dialect_request(srv.port, api, "ttft=2,gap=1,chunks=2", sock=sock)
                self.assertEqual(len(classify(api, r)["by"]("content")), 2)
                self.assertEqual(self.row(api)["conn"], row["conn"])

    def test_close_after_cuts_before_the_end_marker(self):
        srv = self.srv
        for api in DIALECT_REQUESTS:
            def check():
                r = dialect_request(srv.port, api, "ttft=10,gap=10,chunks=8,close_after=3")
                self.assertTrue(r.eof)
                self.assertFalse(r.terminated)
                s = classify(api, r)
                self.assertEqual(len(s["by"]("content")), 3)
                self.assertEqual(s["by"]("end"), [])
                self.assertIsNone(s["stop"])
                row = self.row(api)
                self.assertEqual((row["outcome"], len(row["sends"])), ("closed", 3))
                self.assert_near(row["end"] - row["t_request"], scheduled(10, 10, 8)[3], srv.tol, f"{api}: close")
            with self.subTest(api=api):
                self.timed(check)

    def test_finish_length_maps_to_the_stop_reason(self):
        srv = self.srv
        for api in DIALECT_REQUESTS:
            with self.subTest(api=api):
                s = classify(api, dialect_request(srv.port, api, "ttft=2,gap=1,chunks=3,finish=length"))
                self.assertEqual(s["stop"], STOP_REASONS[api][1])
                self.assertEqual(s["items"][-1]["kind"], "end")
                if api == "openai-responses":
                    self.assertEqual(s["items"][-1]["event"], "response.incomplete")
                    self.assertEqual(s["items"][-1]["json"]["response"]["status"], "incomplete")

    def test_no_done_bad_json_split_keepalive_per_write(self):
        srv = self.srv
        for api in DIALECT_REQUESTS:
            with self.subTest(api=api):
                # no_done leaves out the end marker only.
                s = classify(api, dialect_request(srv.port, api, "ttft=2,gap=1,chunks=3,no_done=1"))
                self.assertEqual((len(s["by"]("content")), s["by"]("end")), (3, []))
                if api == "anthropic-messages":
                    self.assertEqual(s["items"][-1]["event"], "message_delta")
                if api == "openai-responses":
                    self.assertEqual(s["items"][-1]["event"], "response.output_item.done")
                # bad_json_after: one unparsable event/line before chunk 1, then the stream goes on.
                s = classify(api, dialect_request(srv.port, api, "ttft=2,gap=1,chunks=3,bad_json_after=1"))
                kinds = [i["kind"] for i in s["items"] if i["kind"] != "other"]
                self.assertEqual(kinds, ["content", "bad", "content", "content", "end"])
                self.assertEqual(s["by"]("bad")[0]["data"], "{not json")
                # split: reads end inside the events' JSON, which still parses. Each event
                # leaves in two writes 1 ms apart; a busy client may read both at once.
                def check_split():
                    r = dialect_request(srv.port, api, "ttft=10,gap=15,chunks=6,split=1")
                    evs = classify(api, r)["by"]("content")
                    self.assertEqual(len(evs), 6)
                    ends = r.read_ends()
                    inside = sum(any(e["start"] + 8 < x < e["end"] for x in ends) for e in evs)
                    self.assertGreaterEqual(inside, 3, f"{api}: reads ending inside an event's JSON")
                self.timed(check_split)
                # keepalive: comments in SSE dialects, nothing in NDJSON.
                r = dialect_request(srv.port, api, "ttft=70,gap=1,chunks=2,keepalive=20")
                comments = [e for e in r.events() if e["comments"]] if api not in NDJSON_APIS else []
                if api in NDJSON_APIS:
                    self.assertFalse(bytes(r.body).startswith(b":"))
                    self.assertEqual(len(r.lines()), 3)
                else:
                    self.assertGreaterEqual(len(comments), 2)
                    self.assertIn("keep-alive", comments[0]["comments"])
                self.assertEqual(len(classify(api, r)["by"]("content")), 2)
                # per_write: groups of chunks read together, each group's JSON whole.
                r = dialect_request(srv.port, api, "ttft=10,gap=20,chunks=6,per_write=3")
                evs = classify(api, r)["by"]("content")
                self.assertEqual(len(evs), 6)
                row = self.row(api, "ttft=10,gap=20,chunks=6,per_write=3")
                self.assertEqual(len(set(row["sends"])), 2)

    def test_status_and_request_checks(self):
        srv = self.srv
        for api in DIALECT_REQUESTS:
            with self.subTest(api=api):
                r = dialect_request(srv.port, api, "status=429")
                self.assertEqual((r.status, r.headers["retry-after"]), (429, "1"))
                err = json.loads(r.body)
                if api == "anthropic-messages":
                    self.assertEqual((err["type"], err["error"]["type"]), ("error", "rate_limit_error"))
                elif api == "gemini":
                    self.assertEqual((err["error"]["code"], err["error"]["status"]), (429, "RESOURCE_EXHAUSTED"))
                elif api in NDJSON_APIS:
                    self.assertIsInstance(err["error"], str)
                else:
                    self.assertEqual(err["error"]["code"], "rate_limit_exceeded")
                r = dialect_request(srv.port, api, "bogus=1")
                self.assertEqual(r.status, 400)
                self.assertIn("bogus", r.body.decode())
        # Anthropic requires max_tokens.
        body = dict(DIALECT_REQUESTS["anthropic-messages"][1])
        del body["max_tokens"]
        r = dialect_request(srv.port, "anthropic-messages", "chunks=2", body)
        self.assertEqual(r.status, 400)
        self.assertEqual(json.loads(r.body)["error"], {"type": "invalid_request_error",
                                                       "message": "max_tokens: Field required"})
        # Auth headers are accepted and named in the log; "/v1" may be left out.
        r, _ = request(srv.port, "/s/ttft=2,chunks=2/messages", DIALECT_REQUESTS["anthropic-messages"][1],
                       headers={"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"})
        self.assertEqual(len(classify("anthropic-messages", r)["by"]("content")), 2)
        row = self.row("anthropic-messages", "ttft=2,chunks=2")
        self.assertEqual((row["auth"], row["anthropic_version"]), (["x-api-key"], "2023-06-01"))
        self.assertNotIn("sk-ant-test", json.dumps(row))
        r, _ = request(srv.port, "/s/ttft=2,chunks=2/v1beta/models/g1:streamGenerateContent?alt=sse",
                       DIALECT_REQUESTS["gemini"][1], headers={"x-goog-api-key": "k"})
        self.assertEqual(len(classify("gemini", r)["by"]("content")), 2)
        row = self.row("gemini", "ttft=2,chunks=2")
        self.assertEqual((row["auth"], row["query"], row["model"]), (["x-goog-api-key"], "alt=sse", "g1"))
        # Gemini streams only with alt=sse; :generateContent answers once.
        r, _ = request(srv.port, "/s/chunks=2/v1beta/models/g1:streamGenerateContent", DIALECT_REQUESTS["gemini"][1])
        self.assertEqual(r.status, 400)
        r, _ = request(srv.port, "/s/ttft=2,chunks=3/v1beta/models/g1:generateContent", DIALECT_REQUESTS["gemini"][1])
        j = json.loads(r.body)
        self.assertEqual(j["candidates"][0]["content"]["parts"][0]["text"], " ".join(upstream.WORDS[:3]))
        self.assertEqual(j["candidates"][0]["finishReason"], "STOP")
        # Ollama streams by default; "stream": false gets one answer.
        body = dict(DIALECT_REQUESTS["ollama-chat"][1], stream=False)
        r = dialect_request(srv.port, "ollama-chat", "ttft=2,chunks=3", body)
        self.assertEqual(r.headers["content-type"], "application/json")
        j = json.loads(r.body)
        self.assertEqual((j["done"], j["message"]["content"]), (True, " ".join(upstream.WORDS[:3])))
        # Anthropic and Responses without "stream": true answer once too.
        for api, path in (("anthropic-messages", "content"), ("openai-responses", "output")):
            body = dict(DIALECT_REQUESTS[api][1])
            del body["stream"]
            j = json.loads(dialect_request(srv.port, api, "ttft=2,chunks=3", body).body)
            self.assertTrue(j[path], j)


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki_dir = tempfile.mkdtemp(prefix="upstream-pki-")
        p = subprocess.run(["bash", MAKE_PKI, cls.pki_dir], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise AssertionError(f"make_test_pki.sh failed: {p.stderr}")
        cls.pki_output = p.stdout + p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki_dir, ignore_errors=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="upstream-test-")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            rc, _ = s.stop()
            self.assertEqual(rc, 0, s.stderr())
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pki(self, name):
        return os.path.join(self.pki_dir, name)

    def start(self, *extra):
        s = Server(self.tmp, "--tls-cert", self.pki("server.crt"), "--tls-key", self.pki("server.key"), *extra)
        self.servers.append(s)
        return s

    def ctx(self, ca="ca.crt", client=False):
        c = ssl.create_default_context(cafile=self.pki(ca))
        if client:
            c.load_cert_chain(self.pki("client.crt"), self.pki("client.key"))
        return c

    def stream(self, port, ctx, hostname="localhost"):
        with connect(port, ctx, hostname) as s:
            send_request(s, "/s/ttft=10,gap=5,chunks=4/v1/chat/completions", CHAT_BODY)
            return read_response(s)

    def test_pki_script_quiet_and_idempotent(self):
        self.assertEqual(self.pki_output, "")
        names = ["ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key",
                 "other-ca.crt", "other-ca.key"]
        before = {n: os.stat(self.pki(n)).st_mtime_ns for n in names}
        p = subprocess.run(["bash", MAKE_PKI, self.pki_dir], capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))
        self.assertEqual(before, {n: os.stat(self.pki(n)).st_mtime_ns for n in names})

    def test_https_stream_with_test_ca(self):
        srv = self.start()
        for host in ("localhost", "127.0.0.1"):
            r = self.stream(srv.port, self.ctx(), host)
            self.assertEqual(r.status, 200)
            self.assertTrue(r.terminated)
            self.assertEqual(len(content_events(r)), 4)
        rows = srv.wait_log(2)
        self.assertEqual([r["status"] for r in rows], [200, 200])

    def test_wrong_ca_is_refused(self):
        srv = self.start()
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.stream(srv.port, self.ctx("other-ca.crt"))
        # The server shrugs the failed handshake off and keeps serving.
        self.assertEqual(self.stream(srv.port, self.ctx()).status, 200)

    def test_client_certificate_required(self):
        srv = self.start("--tls-client-ca", self.pki("ca.crt"))
        with self.assertRaises((ssl.SSLError, ConnectionError, AssertionError)):
            r = self.stream(srv.port, self.ctx())
            if r.status is None:  # TLS 1.3: the refusal may surface as a closed stream
                raise AssertionError("no response")
        r = self.stream(srv.port, self.ctx(client=True))
        self.assertEqual(r.status, 200)
        self.assertEqual(len(content_events(r)), 4)


if __name__ == "__main__":
    unittest.main()
