"""OTLP push end to end: the exporter's `serve` pushes to an OTLP/HTTP
receiver started here (Python's http.server) that decodes every request:
protobuf with the classes protoc generates from the exporter's own
proto/opentelemetry/... files (python3-protobuf), JSON with json. It checks
metric names, units, attributes, temporality and the exponential histograms'
structure, and that the counts and sums equal the Prometheus series of the
same probes (scraped from the same `serve`). Then delivery: a 503 with
Retry-After is retried (nothing dropped), a receiver that is down makes
llm_stream_otlp_dropped_total rise while probing keeps its schedule, and a
header read from a secret file reaches the receiver and never the log or
/config."""
import gzip
import http.server
import importlib
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import unittest

from harness import (ROOT, Exporter, TempDir, Upstream, free_port, http_get, http_post,
                     make_pki, render_config, wait_for)

SECRET = 'otlp-secret-7f3a9c1e55d0'
GAP_MS = 20
CHUNKS = 8
SERVED_MODEL = 'test-model-2025-01-31'


def load_proto_module(workdir):
    """metrics_service_pb2 compiled by protoc from proto/ into workdir."""
    proto_root = os.path.join(ROOT, 'proto')
    files = []
    for d, _, names in os.walk(os.path.join(proto_root, 'opentelemetry')):
        files += [os.path.join(d, n) for n in names if n.endswith('.proto')]
    subprocess.run(['protoc', f'--proto_path={proto_root}', f'--python_out={workdir}'] + files,
                   check=True)
    sys.path.insert(0, workdir)
    return importlib.import_module('opentelemetry.proto.collector.metrics.v1.metrics_service_pb2')


class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1: records every request decoded to
    the OTLP/JSON shape (protobuf through MessageToDict), answers 200, or
    the statuses queued in `answers` first."""

    def __init__(self, pb2, tls=None):
        self.pb2 = pb2
        self.tls = tls  # (cert, key): serve https
        self.requests = []  # dicts: t, path, headers, content_type, status, body (decoded)
        self.answers = []   # (status, headers) to give before answering 200
        self.lock = threading.Lock()

    def __enter__(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get('Content-Length', '0')))
                if self.headers.get('Content-Encoding') == 'gzip':
                    raw = gzip.decompress(raw)
                status, extra, answer = 200, {}, b''
                with receiver.lock:
                    if receiver.answers:
                        status, extra, *rest = receiver.answers.pop(0)
                        answer = rest[0] if rest else b''
                    receiver.requests.append({
                        't': time.monotonic(), 'path': self.path, 'headers': dict(self.headers),
                        'content_type': self.headers.get('Content-Type'), 'status': status,
                        'body': receiver.decode(self.headers.get('Content-Type'), raw)})
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header('Content-Type', 'application/x-protobuf')
                self.send_header('Content-Length', str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def decode(self, content_type, raw):
        if content_type == 'application/json':
            return json.loads(raw)
        from google.protobuf.json_format import MessageToDict
        msg = self.pb2.ExportMetricsServiceRequest()
        msg.ParseFromString(raw)
        return MessageToDict(msg)  # the OTLP/JSON field names, 64-bit ints as strings

    def accepted(self):
        with self.lock:
            return [r for r in self.requests if r['status'] == 200]

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def metrics_of(body):
    """{(metric name, target, prompt, extra attribute values...): (metric, point)}."""
    out = {}
    for rm in body['resourceMetrics']:
        for sm in rm['scopeMetrics']:
            for m in sm['metrics']:
                data = m.get('exponentialHistogram') or m.get('sum')
                for p in data['dataPoints']:
                    attrs = attributes(p.get('attributes', []))
                    key = (m['name'], attrs['llm_stream.target'], attrs['llm_stream.prompt'],
                           attrs.get('gen_ai.token.type'), attrs.get('llm_stream.phase'),
                           attrs.get('error.type'))
                    out[key] = (m, data, p, attrs)
    return out


def attributes(kvs):
    out = {}
    for kv in kvs:
        v = kv['value']
        out[kv['key']] = v['stringValue'] if 'stringValue' in v else int(v['intValue'])
    return out


def totals(points, name, target):
    """(count, sum) of histogram `name`, or (None, value) of a sum, over a target's points."""
    count, total = 0, 0.0
    for key, (m, data, p, _) in points.items():
        if key[0] != name or key[1] != target:
            continue
        if 'count' in p:
            count += int(p['count'])
            total += p.get('sum', 0.0)
        else:
            total += p.get('asDouble', 0.0)
    return count, total


def otlp_section(port, extra=''):
    return (f'otlp:\n  endpoint: http://127.0.0.1:{port}\n  interval: 200ms\n  timeout: 150ms\n'
            + extra)


class OtlpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_holder = TempDir()
        cls.pydir = cls.tmp_holder.__enter__()
        cls.pb2 = load_proto_module(cls.pydir)

    @classmethod
    def tearDownClass(cls):
        cls.tmp_holder.__exit__(None, None, None)

    def targets(self, up, interval='60s'):
        spec = f'ttft=50,gap={GAP_MS},chunks={CHUNKS}'
        return [
            {'name': 'steady', 'url': up.url(spec), 'prompts': 'short, long',
             'extra': [f'interval: {interval}']},
            # Answered by a dated snapshot of the requested model, as an alias is.
            {'name': 'stally', 'url': up.url(spec + ',stall=4:300,served_model=' + SERVED_MODEL),
             'extra': [f'interval: {interval}', 'provider: vllm']},
        ]

    def assert_matches_prometheus(self, ex, points):
        """Every OTLP figure equals its Prometheus series for both targets."""
        for target in ('steady', 'stally'):
            def prom(name):
                return ex.value(name, target=target) or 0
            checks = [
                ('gen_ai.client.operation.time_per_output_chunk',
                 'llm_stream_inter_chunk_gap_seconds'),
                ('gen_ai.client.operation.time_to_first_chunk',
                 'llm_stream_time_to_first_token_seconds'),
                ('gen_ai.client.operation.duration', 'llm_stream_duration_seconds'),
            ]
            for otlp_name, prom_name in checks:
                count, total = totals(points, otlp_name, target)
                self.assertEqual(count, prom(prom_name + '_count'), (otlp_name, target))
                self.assertAlmostEqual(total, prom(prom_name + '_sum'), places=6)
            self.assertEqual(totals(points, 'llm_stream.stalls', target)[1],
                             prom('llm_stream_stalls_total'))
            self.assertEqual(totals(points, 'llm_stream.chunks', target)[1],
                             prom('llm_stream_chunks_total'))
        # The planted stall: chunk 4 of each stally probe waits 300 ms.
        self.assertEqual(totals(points, 'llm_stream.stalls', 'stally')[1],
                         ex.value('llm_stream_probes_total', target='stally'))
        self.assertEqual(totals(points, 'llm_stream.stalls', 'steady')[1], 0)

    def check_histogram_structure(self, points):
        """Exponential buckets hold every observation within their bounds."""
        seen = 0
        for key, (m, data, p, _) in points.items():
            if 'positive' not in p:
                continue
            counts = [int(c) for c in p['positive'].get('bucketCounts', [])]
            self.assertEqual(sum(counts) + int(p.get('zeroCount', 0)), int(p['count']), key)
            scale = p.get('scale', 0)
            self.assertTrue(-4 <= scale <= 3, key)
            base = 2 ** (2 ** -scale)
            offset = p['positive'].get('offset', 0)
            if counts and p.get('zeroCount', '0') in (0, '0'):
                self.assertGreater(p['min'], base ** offset * (1 - 1e-9), key)
                self.assertLessEqual(p['max'], base ** (offset + len(counts)) * (1 + 1e-9), key)
                self.assertGreater(counts[0], 0, key)
                self.assertGreater(counts[-1], 0, key)
            seen += 1
        self.assertGreater(seen, 10)

    def test_protobuf_cumulative_matches_prometheus_and_hides_the_secret_header(self):
        with TempDir() as tmp, Upstream(tmp) as up, Receiver(self.pb2) as rx:
            secret_file = os.path.join(tmp, 'otlp-token')
            with open(secret_file, 'w') as f:
                f.write(SECRET + '\n')
            extra = otlp_section(rx.port, f'  headers:\n    X-Otlp-Token: {{file: {secret_file}}}\n'
                                          '    X-Tenant: lab\n  resource: {deployment.environment: test}\n')
            env = {'OTEL_RESOURCE_ATTRIBUTES': 'team=streams,service.name=from-env'}
            with Exporter(tmp, render_config(self.targets(up), extra=extra), env=env) as ex:
                ex.wait_probes('steady', 2)  # one per prompt; interval 60s: no more come
                ex.wait_probes('stally', 1)
                wait_for(lambda: rx.accepted() and self.points_equal(ex, rx), 10,
                         what='an export with every probe')
                last = rx.accepted()[-1]
                points = metrics_of(last['body'])
                self.assert_matches_prometheus(ex, points)
                status, dump = http_get(ex.base + '/config')
            log = ex.proc.output()
        self.assertEqual(last['path'], '/v1/metrics')
        self.assertEqual(last['content_type'], 'application/x-protobuf')
        self.assertEqual(last['headers'].get('X-Otlp-Token'), SECRET)
        self.assertEqual(last['headers'].get('X-Tenant'), 'lab')
        self.assertNotIn(SECRET, log)
        self.assertEqual(status, 200)
        self.assertNotIn(SECRET, dump)
        self.assertIn('X-Otlp-Token: <secret>', dump)
        self.check_names_and_attributes(last['body'], points, up.port)
        self.check_histogram_structure(points)

    def points_equal(self, ex, rx):
        points = metrics_of(rx.accepted()[-1]['body'])
        count, _ = totals(points, 'gen_ai.client.operation.duration', 'steady')
        count2, _ = totals(points, 'gen_ai.client.operation.duration', 'stally')
        return (count == ex.value('llm_stream_probes_total', target='steady') and
                count2 == ex.value('llm_stream_probes_total', target='stally'))

    def check_names_and_attributes(self, body, points, upstream_port):
        resource = attributes(body['resourceMetrics'][0]['resource']['attributes'])
        self.assertEqual(resource['service.name'], 'from-env')  # OTEL_RESOURCE_ATTRIBUTES
        self.assertEqual(resource['team'], 'streams')
        self.assertEqual(resource['deployment.environment'], 'test')
        self.assertTrue(resource['service.version'])
        self.assertTrue(resource['service.instance.id'])
        units = {}
        for (name, target, prompt, *_), (m, data, p, attrs) in points.items():
            units[name] = m['unit']
            self.assertEqual(data['aggregationTemporality'], 'AGGREGATION_TEMPORALITY_CUMULATIVE')
            self.assertLessEqual(int(p['startTimeUnixNano']), int(p['timeUnixNano']))
            self.assertEqual(attrs['gen_ai.operation.name'], 'chat')
            self.assertEqual(attrs['gen_ai.request.model'], 'test-model')
            # The model the stream named in its chunks (the upstream's "model").
            self.assertEqual(attrs['gen_ai.response.model'],
                             SERVED_MODEL if target == 'stally' else 'test-model')
            self.assertEqual(attrs['server.address'], '127.0.0.1')
            self.assertEqual(attrs['server.port'], upstream_port)
            self.assertEqual(attrs['gen_ai.provider.name'],
                             'vllm' if target == 'stally' else 'openai_compatible')
        self.assertEqual(units, {
            'gen_ai.client.operation.duration': 's',
            'gen_ai.client.operation.time_to_first_chunk': 's',
            'gen_ai.client.operation.time_per_output_chunk': 's',
            'gen_ai.client.token.usage': '{token}',
            'llm_stream.stalls': '{stall}', 'llm_stream.stall.duration': 's',
            'llm_stream.chunks': '{chunk}', 'llm_stream.tail': 's', 'llm_stream.max_gap': 's',
            'llm_stream.gap.p95': 's', 'llm_stream.phase.duration': 's'} | (
            # Only where the probe result carries tokens per chunk.
            {'llm_stream.tokens_per_chunk': '{token}'}
            if 'llm_stream.tokens_per_chunk' in units else {}))
        token_types = {key[3] for key in points if key[0] == 'gen_ai.client.token.usage'}
        self.assertEqual(token_types, {'input', 'output'})
        # One gap sample per chunk after the first: 7 per probe of 8 chunks.
        count, total = totals(points, 'gen_ai.client.operation.time_per_output_chunk', 'steady')
        self.assertEqual(count, 2 * (CHUNKS - 1))
        self.assertTrue(abs(total / count - GAP_MS / 1000) < 0.010, total / count)

    def test_json_delta_gzip_sums_to_the_prometheus_totals(self):
        with TempDir() as tmp, Upstream(tmp) as up, Receiver(self.pb2) as rx:
            extra = otlp_section(rx.port, '  protocol: http/json\n  temporality: delta\n'
                                          '  compression: gzip\n')
            with Exporter(tmp, render_config(self.targets(up), extra=extra)) as ex:
                ex.wait_probes('steady', 2)
                ex.wait_probes('stally', 1)
                want = ex.value('llm_stream_inter_chunk_gap_seconds_count', target='steady')

                def delta_total():
                    n = 0
                    for r in rx.accepted():
                        n += totals(metrics_of(r['body']),
                                    'gen_ai.client.operation.time_per_output_chunk', 'steady')[0]
                    return n == want
                wait_for(delta_total, 10, what='delta batches adding up to the gap count')
                merged = {}
                for r in rx.accepted():
                    self.assertEqual(r['content_type'], 'application/json')
                    self.assertEqual(r['headers'].get('Content-Encoding'), 'gzip')
                    for key, (m, data, p, attrs) in metrics_of(r['body']).items():
                        self.assertEqual(data['aggregationTemporality'], 1)  # DELTA, as a number
                        self.assertIsInstance(p['timeUnixNano'], str)  # 64-bit: strings
                        prev = merged.get(key)
                        if prev and 'count' in p:
                            # Delta points follow each other: this one starts where the last ended.
                            self.assertGreaterEqual(int(p['startTimeUnixNano']),
                                                    int(prev[2]['timeUnixNano']))
                        merged[key] = (m, data, p, attrs)
                self.check_histogram_structure(merged)

    def test_503_with_retry_after_is_retried_and_nothing_dropped(self):
        with TempDir() as tmp, Upstream(tmp) as up, Receiver(self.pb2) as rx:
            rx.answers = [(503, {'Retry-After': '1'}), (503, {'Retry-After': '1'})]
            extra = otlp_section(rx.port).replace('interval: 200ms', 'interval: 2s')
            with Exporter(tmp, render_config(self.targets(up), extra=extra)) as ex:
                ex.wait_probes('steady', 2)
                wait_for(lambda: rx.accepted(), 15, what='an accepted export after two 503s')
                dropped = ex.value('llm_stream_otlp_dropped_total')
            reqs = rx.requests
        self.assertEqual([r['status'] for r in reqs[:3]], [503, 503, 200])
        # The same batch, sent again after the Retry-After second.
        self.assertEqual(reqs[0]['body'], reqs[2]['body'])
        self.assertGreaterEqual(reqs[1]['t'] - reqs[0]['t'], 0.9)
        self.assertGreaterEqual(reqs[2]['t'] - reqs[1]['t'], 0.9)
        self.assertEqual(dropped, 0)

    def test_reload_moves_the_push_to_a_changed_endpoint(self):
        with TempDir() as tmp, Upstream(tmp) as up, Receiver(self.pb2) as a, \
                Receiver(self.pb2) as b:
            targets = self.targets(up)
            with Exporter(tmp, render_config(targets, extra=otlp_section(a.port))) as ex:
                ex.wait_probes('steady', 2)
                wait_for(lambda: a.accepted(), 10, what='exports to the first receiver')
                ex.write_config(render_config(targets, extra=otlp_section(b.port)))
                status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 200, body)
                wait_for(lambda: b.accepted(), 10, what='exports to the second receiver')
                settled = len(a.accepted())
                time.sleep(0.6)  # three intervals: none of them to the first receiver
                self.assertEqual(len(a.accepted()), settled)
                # The same cumulative series go on at the new endpoint.
                points = metrics_of(b.accepted()[-1]['body'])
                self.assertEqual(totals(points, 'gen_ai.client.operation.duration', 'steady')[0],
                                 ex.value('llm_stream_probes_total', target='steady'))

    def test_https_with_a_configured_ca_and_a_refused_certificate(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            pki = make_pki(tmp)
            with Receiver(self.pb2, tls=(pki['server_cert'], pki['server_key'])) as rx:
                targets = [{'name': 'steady', 'url': up.url('ttft=20,gap=5,chunks=4')}]
                good = (f'otlp:\n  endpoint: https://127.0.0.1:{rx.port}\n  interval: 200ms\n'
                        f'  timeout: 150ms\n  ca_file: {pki["ca"]}\n')
                with Exporter(tmp, render_config(targets, extra=good)) as ex:
                    ex.wait_probes('steady', 1)
                    wait_for(lambda: rx.accepted(), 10, what='an export over https')
                before = len(rx.requests)
                # A CA that did not sign the receiver's certificate: nothing is sent.
                bad = good.replace(pki['ca'], pki['other_ca'])
                with Exporter(tmp, render_config(targets, extra=bad), name='bad-ca') as ex:
                    ex.wait_probes('steady', 1)
                    wait_for(lambda: 'msg="otlp export error"' in ex.proc.output(), 10,
                             what='the TLS failure logged')
                    log = ex.proc.output()
                self.assertEqual(len(rx.requests), before)
                self.assertIn('certificate verify failed', log)

    def test_partial_success_counts_the_rejected_points_and_masks_secrets(self):
        with TempDir() as tmp, Upstream(tmp) as up, Receiver(self.pb2) as rx:
            answer = self.pb2.ExportMetricsServiceResponse()
            answer.partial_success.rejected_data_points = 5
            answer.partial_success.error_message = f'points too old (token {SECRET})'
            rx.answers = [(200, {}, answer.SerializeToString())]
            secret_file = os.path.join(tmp, 'otlp-token')
            with open(secret_file, 'w') as f:
                f.write(SECRET + '\n')
            extra = otlp_section(rx.port, f'  headers: {{X-Otlp-Token: {{file: {secret_file}}}}}\n')
            with Exporter(tmp, render_config(self.targets(up), extra=extra)) as ex:
                ex.wait_probes('steady', 2)
                wait_for(lambda: len(rx.accepted()) >= 3, 10, what='three accepted exports')
                dropped = ex.value('llm_stream_otlp_dropped_total')
                log = ex.proc.output()
        self.assertEqual(dropped, 5)  # the receiver's count, not retried
        self.assertEqual(log.count('receiver rejected 5 data points: points too old'), 1)
        self.assertNotIn(SECRET, log)

    def test_receiver_down_counts_drops_and_probing_keeps_its_schedule(self):
        dead_port = free_port()  # nothing listens there
        with TempDir() as tmp, Upstream(tmp) as up:
            extra = (f'otlp:\n  endpoint: http://127.0.0.1:{dead_port}\n  interval: 100ms\n'
                     '  timeout: 100ms\n  max_queue: 1\n')
            targets = [{'name': 'steady', 'url': up.url('ttft=20,gap=5,chunks=4'),
                        'extra': ['interval: 250ms']}]
            with Exporter(tmp, render_config(targets, extra=extra)) as ex:
                start = time.monotonic()
                ex.wait_probes('steady', 8, timeout=10)
                elapsed = time.monotonic() - start
                wait_for(lambda: (ex.value('llm_stream_otlp_dropped_total') or 0) > 0, 10,
                         what='dropped data points counted')
                log = ex.proc.output()
        # 8 probes at 250 ms: about 2 s; export failures never hold a probe up.
        self.assertLess(elapsed, 4.0)
        self.assertEqual(log.count('msg="otlp export error"'),
                         len(set(line.split('error=')[1] for line in log.splitlines()
                                 if 'msg="otlp export error"' in line)))


if __name__ == '__main__':
    unittest.main()
