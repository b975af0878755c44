#!/usr/bin/env python3
"""A stand-in for llm_stream_exporter's /metrics, for testing the PromQL of the
dashboards and rules without the C++ exporter (promql_e2e.py --fake-exporter).

It exposes every metric of DESIGN §3 (deploylib's list) with the default
buckets, for three targets (three dialects) x two prompts, and simulates a probe per
target/prompt every --probe-interval seconds with random but plausible
timings, so counters and histograms grow between scrapes.

    python3 tests/deploy/fake_exporter.py --port 9687
"""
import argparse
import bisect
import http.server
import random
import threading
import time

GAP_BUCKETS = [.005, .01, .02, .03, .05, .075, .1, .15, .2, .25, .3, .4, .5, .75, 1, 1.5, 2, 3, 5, 10]
TTFT_BUCKETS = [.05, .1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60]
DURATION_BUCKETS = [.05, .1, .25, .5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300]
PHASE_BUCKETS = [.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30]
TPS_BUCKETS = [1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000]
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


class Histogram:
    def __init__(self, buckets):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0

    def observe(self, v):
        self.counts[bisect.bisect_left(self.buckets, v)] += 1
        self.sum += v

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
        tokens = len(gaps) + 1
        self.c["out_tokens"] += tokens
        self.c["in_tokens"] += 20
        self.h["output_tokens_per_second"].observe(tokens / max(sum(gaps), 1e-3))
        self.finish["stop" if rnd.random() < 0.9 else "length"] += 1
        self.c["success"] += 1
        self.last_success = 1
        self.last_ts = now
        self.diagnosis["transport"] = 1 if len(stalls) > 0 else 0

    def lines(self):
        L, out = self.labels, []
        for name, h in self.h.items():
            out += h.lines("llm_stream_" + name, L)
        for p, h in self.phase.items():
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

    def exposition(self):
        with self.lock:
            out = []
            for s in self.series:
                out += s.lines()
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


def serve(port, probe_interval=0.5):
    """Starts the fake in a thread; returns (server, url)."""
    fake = Fake(probe_interval)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/metrics"):
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
    args = ap.parse_args()
    srv, url = serve(args.port, args.probe_interval)
    print(url, flush=True)
    time.sleep(args.duration)
    srv.shutdown()


if __name__ == "__main__":
    main()
