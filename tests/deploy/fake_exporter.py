#!/usr/bin/env python3
"""A stand-in for llm_stream_exporter's /metrics, for testing the PromQL of the
dashboards and rules without the C++ exporter (promql_e2e.py --fake-exporter).

It exposes every metric of DESIGN §3 (deploylib's list) with the default
buckets, for three targets (three dialects) x two prompts, and simulates a probe per
target/prompt every --probe-interval seconds with random but plausible
timings, so counters and histograms grow between scrapes.

    python3 tests/deploy/fake_exporter.py --port 9687 [--native]

With --native (serve(native=True)) a scraper that asks for the protobuf
exposition (Prometheus with native histograms on) gets it, every histogram with
its native (schema 3) buckets next to the classic ones, as the exporter sends
them with its default `metrics:`; the messages are encoded here by hand (stdlib
only) after proto/prometheus/metrics.proto. promql_e2e.py --native uses it to
show that every panel and rule works on native histograms alone.
"""
import argparse
import bisect
import http.server
import math
import random
import re
import struct
import threading
import time

GAP_BUCKETS = [.005, .01, .02, .03, .05, .075, .1, .15, .2, .25, .3, .4, .5, .75, 1, 1.5, 2, 3, 5, 10]
TTFT_BUCKETS = [.05, .1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60]
DURATION_BUCKETS = [.05, .1, .25, .5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300]
PHASE_BUCKETS = [.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30]
TPS_BUCKETS = [1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000]
TPC_BUCKETS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
PHASES = ["resolve", "connect", "tls", "request", "headers", "first_token"]
REASONS = ["dns", "connect", "tls", "http_4xx", "http_429", "http_5xx", "timeout_first_token",
           "timeout_idle", "timeout_total", "truncated", "protocol", "upstream_error", "canceled"]
SHAPES = ["queue", "transport", "long_answer", "shared_capacity", "generation"]
TARGETS = {"fake-openai": "gpt-4o-mini", "fake-vllm": "llama-3.1-8b", "fake-claude": "claude-sonnet-4-5"}
# llm_stream_target_info's api and host of each target (DESIGN §9).
TARGET_INFO = {"fake-openai": ("openai-chat", "api.openai.com"),
               "fake-vllm": ("openai-completions", "vllm.internal:8000"),
               "fake-claude": ("anthropic-messages", "api.anthropic.com")}
PROMPTS = ["short", "long"]


PROTOBUF = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
SCHEMA = 3  # native buckets: (2^((i-1)/8), 2^(i/8)]
ZERO_THRESHOLD = 1e-5


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire, payload):
    """One field: key, then the payload (varint, 8 bytes, or length-delimited)."""
    key = varint(number << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def zigzag(n):
    return (n << 1) ^ (n >> 63)


def pb_double(number, v):
    return field(number, 1, struct.pack("<d", v))


def pb_labels(labels):
    return b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, v.encode())) for k, v in labels)


class Histogram:
    def __init__(self, buckets):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0
        self.native = {}  # native bucket index -> count
        self.zero = 0

    def observe(self, v):
        self.counts[bisect.bisect_left(self.buckets, v)] += 1
        self.sum += v
        if v <= ZERO_THRESHOLD:
            self.zero += 1
        else:
            i = math.ceil(math.log2(v) * 2 ** SCHEMA)
            self.native[i] = self.native.get(i, 0) + 1

    def protobuf(self):
        """The Histogram message: classic buckets, then the native ones as
        spans (runs of consecutive indexes) and deltas between counts."""
        out = [field(1, 0, varint(sum(self.counts))), pb_double(2, self.sum)]
        cum = 0
        for b, c in zip(self.buckets, self.counts):
            cum += c
            out.append(field(3, 2, field(1, 0, varint(cum)) + pb_double(2, b)))
        out += [field(5, 0, varint(zigzag(SCHEMA))), pb_double(6, ZERO_THRESHOLD),
                field(7, 0, varint(self.zero))]
        idx = sorted(self.native)
        spans, prev_end = [], None
        for i in idx:
            if prev_end is not None and i == prev_end:
                spans[-1][1] += 1
            else:
                spans.append([i if prev_end is None else i - prev_end, 1])
            prev_end = i + 1
        if not spans:
            spans = [[0, 0]]  # a no-op span: native even before the first observation
        for offset, length in spans:
            out.append(field(12, 2, field(1, 0, varint(zigzag(offset))) + field(2, 0, varint(length))))
        last = 0
        for i in idx:
            out.append(field(13, 0, varint(zigzag(self.native[i] - last))))
            last = self.native[i]
        return b"".join(out)

    def lines(self, name, labels):
        out, cum = [], 0
        for b, c in zip(self.buckets + [float("inf")], self.counts):
            cum += c
            le = "+Inf" if b == float("inf") else f"{b:g}"
            out.append(f'{name}_bucket{{{labels},le="{le}"}} {cum}')
        out.append(f"{name}_sum{{{labels}}} {self.sum}")
        out.append(f"{name}_count{{{labels}}} {cum}")
        return out


class Series:
    def __init__(self, target, model, prompt):
        self.labels = f'target="{target}",model="{model}",prompt="{prompt}"'
        self.h = {
            "time_to_first_token_seconds": Histogram(TTFT_BUCKETS),
            "inter_chunk_gap_seconds": Histogram(GAP_BUCKETS),
            "probe_gap_p95_seconds": Histogram(GAP_BUCKETS),
            "probe_max_gap_seconds": Histogram(GAP_BUCKETS),
            "tail_seconds": Histogram(DURATION_BUCKETS),
            "duration_seconds": Histogram(DURATION_BUCKETS),
            "output_tokens_per_second": Histogram(TPS_BUCKETS),
            "tokens_per_chunk": Histogram(TPC_BUCKETS),
        }
        self.phase = {p: Histogram(PHASE_BUCKETS) for p in PHASES}
        self.c = {k: 0 for k in ("success", "failure", "stalls", "stall_seconds", "stalled", "chunks",
                                 "coalesced", "out_tokens", "in_tokens", "warmup")}
        self.failures = {r: 0 for r in REASONS}
        self.finish = {"stop": 0, "length": 0}
        self.last_success = 0
        self.last_ts = 0.0
        self.diagnosis = {s: 0 for s in SHAPES}

    def probe(self, rnd, now):
        if self.c["warmup"] < 2:
            self.c["warmup"] += 1
            return
        if rnd.random() < 0.1:
            self.c["failure"] += 1
            self.failures[rnd.choice(["http_5xx", "timeout_idle", "http_429"])] += 1
            self.last_success = 0
            self.last_ts = now
            return
        phases = {"resolve": rnd.uniform(.001, .01), "connect": rnd.uniform(.005, .03),
                  "tls": rnd.uniform(.01, .05), "request": rnd.uniform(.0005, .002),
                  "headers": rnd.uniform(.05, .4), "first_token": rnd.uniform(.1, .8)}
        for p, v in phases.items():
            self.phase[p].observe(v)
        ttft = sum(phases.values())
        self.h["time_to_first_token_seconds"].observe(ttft)
        gaps = [rnd.expovariate(1 / 0.03) for _ in range(rnd.randint(20, 60))]
        if rnd.random() < 0.3:
            gaps[rnd.randrange(len(gaps))] = rnd.uniform(0.25, 1.2)
        for g in gaps:
            self.h["inter_chunk_gap_seconds"].observe(g)
        s = sorted(gaps)
        self.h["probe_gap_p95_seconds"].observe(s[max(0, int(0.95 * len(s) + 0.999) - 1)])
        self.h["probe_max_gap_seconds"].observe(s[-1])
        stalls = [g for g in gaps if g >= 0.25]
        self.c["stalls"] += len(stalls)
        self.c["stall_seconds"] += sum(stalls)
        self.c["stalled"] += 1 if stalls else 0
        self.c["chunks"] += len(gaps) + 1
        self.c["coalesced"] += sum(1 for g in gaps if g < 0.001)  # same read as the chunk before
        tail = rnd.uniform(.001, .05)
        self.h["tail_seconds"].observe(tail)
        self.h["duration_seconds"].observe(ttft + sum(gaps) + tail)
        per_chunk = rnd.choice([1, 1, 1, 4])  # now and then a batching server
        tokens = (len(gaps) + 1) * per_chunk
        self.h["tokens_per_chunk"].observe(per_chunk)
        self.c["out_tokens"] += tokens
        self.c["in_tokens"] += 20
        self.h["output_tokens_per_second"].observe(tokens / max(sum(gaps), 1e-3))
        self.finish["stop" if rnd.random() < 0.9 else "length"] += 1
        self.c["success"] += 1
        self.last_success = 1
        self.last_ts = now
        self.diagnosis["transport"] = 1 if len(stalls) > 0 else 0

    def histograms(self):
        """[(family name, [(label, value)], Histogram)] of this series set."""
        labels = re.findall(r'(\w+)="([^"]*)"', self.labels)
        out = [("llm_stream_" + name, labels, h) for name, h in self.h.items()]
        out += [("llm_stream_phase_seconds", labels + [("phase", p)], h) for p, h in self.phase.items()]
        return out

    def lines(self, histograms=True):
        L, out = self.labels, []
        for name, h in self.h.items() if histograms else ():
            out += h.lines("llm_stream_" + name, L)
        for p, h in self.phase.items() if histograms else ():
            out += h.lines("llm_stream_phase_seconds", f'{L},phase="{p}"')
        out.append(f'llm_stream_probes_total{{{L},result="success"}} {self.c["success"]}')
        out.append(f'llm_stream_probes_total{{{L},result="failure"}} {self.c["failure"]}')
        for r, v in self.failures.items():
            out.append(f'llm_stream_probe_failures_total{{{L},reason="{r}"}} {v}')
        for r, v in self.finish.items():
            out.append(f'llm_stream_finish_reasons_total{{{L},reason="{r}"}} {v}')
        for metric, key in (("stalls_total", "stalls"), ("stall_seconds_total", "stall_seconds"),
                            ("stalled_probes_total", "stalled"), ("chunks_total", "chunks"),
                            ("coalesced_chunks_total", "coalesced"),
                            ("output_tokens_total", "out_tokens"), ("input_tokens_total", "in_tokens"),
                            ("warmup_probes_total", "warmup")):
            out.append(f"llm_stream_{metric}{{{L}}} {self.c[key]}")
        out.append(f"llm_stream_last_probe_success{{{L}}} {self.last_success}")
        out.append(f"llm_stream_last_probe_timestamp_seconds{{{L}}} {self.last_ts}")
        for s, v in self.diagnosis.items():
            out.append(f'llm_stream_diagnosis{{{L},shape="{s}"}} {v}')
        return out


class Fake:
    def __init__(self, probe_interval, seed=1):
        self.rnd = random.Random(seed)
        self.series = [Series(t, m, p) for t, m in TARGETS.items() for p in PROMPTS]
        self.lock = threading.Lock()
        self.interval = probe_interval
        self.stop = threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while not self.stop.is_set():
            with self.lock:
                for s in self.series:
                    s.probe(self.rnd, time.time())
            self.stop.wait(self.interval)

    def protobuf(self):
        """The delimited protobuf exposition: histograms as HISTOGRAM families
        (classic and native buckets), every other line as an UNTYPED one."""
        families = {}
        with self.lock:
            for s in self.series:
                for name, labels, h in s.histograms():
                    families.setdefault((name, 4), []).append(pb_labels(labels) + field(7, 2, h.protobuf()))
            text = self.lines(histograms=False)
        for line in text.splitlines():
            m = re.match(r"(\w+)(?:\{(.*)\})? (\S+)$", line)
            labels = re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")
            families.setdefault((m.group(1), 3), []).append(
                pb_labels(labels) + field(5, 2, pb_double(1, float(m.group(3)))))
        out = []
        for (name, kind), metrics in families.items():
            msg = field(1, 2, name.encode()) + field(3, 0, varint(kind)) + b"".join(
                field(4, 2, m) for m in metrics)
            out.append(varint(len(msg)) + msg)
        return b"".join(out)

    def exposition(self, histograms=True):
        with self.lock:
            return self.lines(histograms)

    def lines(self, histograms=True):
        """The text exposition (without the histograms: the rest of the
        protobuf one); the caller holds the lock."""
        out = []
        for s in self.series:
            out += s.lines(histograms)
        for t, model in TARGETS.items():
            out.append(f'llm_stream_stall_threshold_seconds{{target="{t}"}} 0.25')
            # the built-in alert: thresholds the rules compare with
            out.append(f'llm_stream_alert_ttft_seconds{{target="{t}"}} 5')
            out.append(f'llm_stream_alert_worst_gap_seconds{{target="{t}"}} 1')
            out.append(f'llm_stream_alert_stall_share{{target="{t}"}} 0.2')
            out.append(f'llm_stream_backoffs_total{{target="{t}"}} 0')
            out.append(f'llm_stream_unexpected_content_type_total{{target="{t}"}} 0')
            api, host = TARGET_INFO[t]
            out.append(f'llm_stream_target_info{{target="{t}",api="{api}",model="{model}",'
                       f'host="{host}"}} 1')
        out.append('llm_stream_exporter_build_info{version="0.0.0-fake",revision="fake"} 1')
        out.append("llm_stream_exporter_config_last_reload_successful 1")
        out.append(f"llm_stream_exporter_config_last_reload_success_timestamp_seconds {time.time()}")
        out.append("llm_stream_row_write_errors_total 0")
        out.append("llm_stream_otlp_dropped_total 0")
        out.append("llm_stream_shard_index 0")  # not sharded
        out.append("llm_stream_shards 1")
        for result in ("success", "failure"):
            out.append(f'llm_stream_exporter_config_reloads_total{{result="{result}"}} 0')
        return "\n".join(out) + "\n"


def serve(port, probe_interval=0.5, native=False):
    """Starts the fake in a thread; returns (server, url). native: answer the
    protobuf exposition, native histograms included, to a scraper asking for it."""
    fake = Fake(probe_interval)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/metrics") and native and \
                    "application/vnd.google.protobuf" in self.headers.get("Accept", ""):
                body, ctype = fake.protobuf(), PROTOBUF
            elif self.path.startswith("/metrics"):
                body = fake.exposition().encode()
                ctype = "text/plain; version=0.0.4; charset=utf-8"
            elif self.path in ("/-/healthy", "/-/ready"):
                body, ctype = b"OK\n", "text/plain"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.fake = fake
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/metrics"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--probe-interval", type=float, default=0.5)
    ap.add_argument("--duration", type=float, default=300, help="exit after this many seconds")
    ap.add_argument("--native", action="store_true", help="serve the protobuf exposition when asked")
    args = ap.parse_args()
    srv, url = serve(args.port, args.probe_interval, native=args.native)
    print(url, flush=True)
    time.sleep(args.duration)
    srv.shutdown()


if __name__ == "__main__":
    main()
