"""GET /probe?target= end to end: the real exporter and the scripted upstream.

A configured target with a planted TTFT (150 ms) and one planted stall
(400 ms before chunk 7 of 12): probe_ttft_seconds within 150 ms -5/+50 ms
(the upstream's clock plus this shared machine's wake-up noise),
probe_stalls exactly 1; debug=true lists exactly the 12 planted content
chunks with the stall's gap; format=json is the probe's row; a failing target
answers probe_success 0 with its reason and status, and a key the upstream
echoes back is masked in the debug answer. A target that is not in
the config (a name, or a URL) is 400 and no connection is made to anything;
asked again within min_interval: 429 with Retry-After; beyond
probe_endpoint.max_concurrent: 503. The scheduled series and rows are not
touched by any of it (llm_stream_probes_total, /api/v1/probes unchanged).
A reload while a probe runs leaves it to finish; a shutdown while one runs
is prompt and clean (exit 0 within 3 s). A real Prometheus scraping /probe
with the scrape config of docs/probe-endpoint.md (taken from the doc) stores
probe_success and probe_ttft_seconds under the target's name; promtool finds
nothing to say about the answer."""
import json
import os
import re
import shutil
import socket
import threading
import time
import unittest
import urllib.parse

from harness import (ROOT, Exporter, Proc, Prometheus, TempDir, Upstream, free_port, http_get,
                     promtool_findings, render_config, wait_for)

PLANTED = 'ttft=150,gap=20,chunks=12,stall=6:400'
TOKEN = 'sk-probe-0123456789abcdef'  # the `echo` target's key, which its upstream echoes
ECHO = 'status=401,error_body=' + urllib.parse.quote(
    f'{{"error": {{"message": "Incorrect API key provided: {TOKEN}"}}}}', safe='')
TTFT_S, TTFT_BELOW_S, TTFT_ABOVE_S = 0.150, 0.005, 0.050


def metric(text, name, **labels):
    """The value of the one sample `name{labels}` of a text exposition."""
    want = ','.join(f'{k}="{v}"' for k, v in labels.items())
    pattern = '^' + re.escape(name) + (r'\{' + re.escape(want) + r'\}' if want else '') + r' (\S+)$'
    found = re.findall(pattern, text, re.M)
    if len(found) != 1:
        raise AssertionError(f'{name}{{{want}}}: {len(found)} samples in\n{text}')
    return float(found[0])


def probes_total(ex):
    return sum(v for n, _, v in ex.samples() if n == 'llm_stream_probes_total')


class ProbeEndpoint(unittest.TestCase):
    def test_probe_now(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            targets = [{'name': 'planted', 'url': up.url(PLANTED)},
                       {'name': 'slow', 'url': up.url('ttft=1500,gap=10,chunks=3')},
                       {'name': 'broken', 'url': up.url('status=503')},
                       {'name': 'echo', 'url': up.url(ECHO),
                        'extra': ['auth: {bearer_token_env: LSE_PROBE_TOKEN}']}]
            cfg = render_config(targets, extra='probe_endpoint: {max_concurrent: 1}\n')
            cfg = cfg.replace('min_interval: 100ms', 'min_interval: 2s')
            with Exporter(tmp, cfg, env={'LSE_PROBE_TOKEN': TOKEN}) as ex:
                for t in ('planted', 'slow', 'broken', 'echo'):
                    ex.wait_probes(t, 1, timeout=20)  # the schedule's first round, then 60 s idle
                before_total = probes_total(ex)
                before_rows = [r['id'] for r in ex.rows()]
                before_requests = len(up.requests())

                self.check_metrics_answer(ex)
                self.check_too_soon(ex)
                self.check_unconfigured(ex, up, before_requests + 1)
                time.sleep(2)  # min_interval
                debug_id = self.check_debug(ex)
                time.sleep(2)
                json_id = self.check_json(ex)
                self.check_max_concurrent(ex)
                self.check_failure(ex)
                self.check_secret_masked(ex)

                # The schedule's series and rows saw none of it.
                self.assertEqual(probes_total(ex), before_total)
                after_rows = [r['id'] for r in ex.rows()]
                self.assertEqual(after_rows, before_rows)
                self.assertNotIn(debug_id, after_rows)
                self.assertNotIn(json_id, after_rows)

    def test_reload_and_shutdown_while_probing(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = render_config([{'name': 'slow', 'url': up.url('ttft=1500,gap=10,chunks=3')}])
            with Exporter(tmp, cfg) as ex:
                ex.wait_probes('slow', 1, timeout=20)
                answers = []
                asker = threading.Thread(target=lambda: answers.append(
                    http_get(ex.base + '/probe?target=slow', timeout=10)))
                asker.start()
                time.sleep(0.3)
                status, body = http_post_reload(ex)
                self.assertEqual(status, 200, body)
                asker.join()
                self.assertEqual(answers[0][0], 200, answers)
                self.assertEqual(metric(answers[0][1], 'probe_success'), 1)  # the reload left it be

                asker = threading.Thread(target=lambda: answers.append(
                    http_get(ex.base + '/probe?target=slow', timeout=10)))
                asker.start()
                time.sleep(0.3)
                t0 = time.monotonic()
                rc = ex.proc.stop()
                self.assertLess(time.monotonic() - t0, 3.0)
                self.assertEqual(rc, 0, ex.proc.output()[-3000:])
                asker.join()
                self.assertNotEqual(answers[1][0], 200, answers)  # cut short, no made-up answer

    def test_prometheus_scrapes_probe_with_the_documented_config(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = render_config([{'name': 'planted', 'url': up.url(PLANTED)}])
            with Exporter(tmp, cfg) as ex:
                ex.wait_probes('planted', 1, timeout=20)
                before_total = probes_total(ex)
                status, text = http_get(ex.base + '/probe?target=planted', timeout=10)
                self.assertEqual(status, 200, text)
                self.assertEqual(promtool_findings(text), (0, []))
                with DocumentedProbeScrape(tmp, f'127.0.0.1:{ex.port}') as prom:
                    def stored():
                        r = prom.query('probe_ttft_seconds{job="llm-stream-probe",target="planted"}')
                        return r and float(r[0]['value'][1])
                    ttft = wait_for(stored, 30, interval=0.5, what='probe_ttft_seconds in Prometheus')
                    self.assertGreaterEqual(ttft, TTFT_S - TTFT_BELOW_S)
                    self.assertLessEqual(ttft, TTFT_S + TTFT_ABOVE_S)
                    ok = prom.query('probe_success{target="planted"}')
                    self.assertEqual(float(ok[0]['value'][1]), 1, ok)
                    stalls = prom.query('probe_stalls{target="planted"}')
                    self.assertEqual(float(stalls[0]['value'][1]), 1, stalls)
                self.assertEqual(probes_total(ex), before_total)

    def check_metrics_answer(self, ex):
        status, text = http_get(ex.base + '/probe?target=planted', timeout=10)
        self.assertEqual(status, 200, text)
        self.assertEqual(metric(text, 'probe_success'), 1)
        ttft = metric(text, 'probe_ttft_seconds')
        self.assertGreaterEqual(ttft, TTFT_S - TTFT_BELOW_S, text)
        self.assertLessEqual(ttft, TTFT_S + TTFT_ABOVE_S, text)
        self.assertEqual(metric(text, 'probe_stalls'), 1)
        self.assertEqual(metric(text, 'probe_chunks'), 12)
        self.assertAlmostEqual(metric(text, 'probe_max_gap_seconds'), 0.400, delta=0.050)
        self.assertEqual(metric(text, 'probe_http_status_code'), 200)
        self.assertEqual(metric(text, 'probe_failure_reason', reason='none'), 1)
        self.assertGreater(metric(text, 'probe_http_duration_seconds', phase='first_token'), 0.1)
        self.assertGreaterEqual(metric(text, 'probe_duration_seconds'), 0.150 + 0.400 + 10 * 0.020)

    def check_too_soon(self, ex):
        status, body, headers = get_with_headers(ex.base + '/probe?target=planted')
        self.assertEqual(status, 429, body)
        self.assertIn(headers.get('Retry-After'), ('1', '2'), headers)
        self.assertIn('min_interval', body)

    def check_unconfigured(self, ex, up, requests_so_far):
        # Something listening that a URL in the query could point at: nothing may connect.
        trap = socket.socket()
        trap.bind(('127.0.0.1', 0))
        trap.listen(8)
        trap.setblocking(False)
        trap_url = f'http://127.0.0.1:{trap.getsockname()[1]}/v1'
        try:
            for target in ('nope', trap_url, up.url(PLANTED)):
                q = urllib.parse.urlencode({'target': target})
                status, body = http_get(ex.base + '/probe?' + q)
                self.assertEqual(status, 400, body)
                self.assertIn('not in the configuration', body)
            status, body = http_get(ex.base + '/probe?target=planted&prompt=long')
            self.assertEqual(status, 400, body)  # a prompt the target does not use
            time.sleep(0.3)
            with self.assertRaises(BlockingIOError):
                trap.accept()
        finally:
            trap.close()
        # The upstream saw only the one on-demand probe of `planted` so far.
        self.assertEqual(len(up.requests()), requests_so_far)

    def check_debug(self, ex):
        status, text = http_get(ex.base + '/probe?target=planted&debug=true', timeout=10)
        self.assertEqual(status, 200, text)
        content = re.findall(r'^\s+\d+\s+(\S+)\s+(\S+)\s+\d+\s+content(?:\+\S+)?$', text, re.M)
        self.assertEqual(len(content), 12, text)
        gaps = [float(g) for _, g in content[1:]]
        self.assertEqual(sum(1 for g in gaps if g > 0.25), 1, text)
        self.assertAlmostEqual(gaps[5], 0.400, delta=0.050)  # before chunk 7
        self.assertIn('12 content chunks', text)
        self.assertRegex(text, r'level=warn msg=stall at_chunk=7 ')
        self.assertIn('msg="probe succeeded"', text)
        self.assertIn('\nprobe_stalls 1\n', text)
        return re.search(r'probe_id=([0-9a-f]{16})', text).group(1)

    def check_json(self, ex):
        status, body = http_get(ex.base + '/probe?target=planted&format=json', timeout=10)
        self.assertEqual(status, 200, body)
        row = json.loads(body)
        self.assertEqual(row['target'], 'planted')
        self.assertEqual(row['prompt'], 'short')
        self.assertTrue(row['ok'])
        self.assertEqual(row['chunks'], 12)
        self.assertEqual(row['stalls'], 1)
        self.assertEqual(len(row['gaps_ms']), 11)
        return row['id']

    def check_failure(self, ex):
        status, text = http_get(ex.base + '/probe?target=broken', timeout=10)
        self.assertEqual(status, 200, text)
        self.assertEqual(metric(text, 'probe_success'), 0)
        self.assertEqual(metric(text, 'probe_failure_reason', reason='http_5xx'), 1)
        self.assertEqual(metric(text, 'probe_http_status_code'), 503)

    def check_secret_masked(self, ex):
        status, text = http_get(ex.base + '/probe?target=echo&debug=true', timeout=10)
        self.assertEqual(status, 200, text)
        self.assertIn('reason=http_4xx', text)
        self.assertIn('Incorrect API key provided: <redacted>', text)
        self.assertNotIn(TOKEN, text)
        self.assertNotIn(TOKEN[-8:], text)

    def check_max_concurrent(self, ex):
        slow = {}
        t = threading.Thread(target=lambda: slow.update(
            answer=http_get(ex.base + '/probe?target=slow', timeout=10)))
        t.start()
        time.sleep(0.5)  # the slow probe waits 1.5 s for its first chunk
        # `broken` was never probed on demand: only the cap stands in its way, and a
        # refusal is no start (check_failure probes it right after).
        status, body, _ = get_with_headers(ex.base + '/probe?target=broken')
        t.join()
        self.assertEqual(status, 503, body)
        self.assertIn('max_concurrent', body)
        self.assertEqual(slow['answer'][0], 200, slow)
        self.assertEqual(metric(slow['answer'][1], 'probe_success'), 1)


class DocumentedProbeScrape(Prometheus):
    """Prometheus with the scrape config of docs/probe-endpoint.md, as the doc has it but for
    the exporter's address, the target names and a 2 s interval."""

    def __init__(self, workdir, exporter_address):
        super().__init__(workdir, [])
        with open(os.path.join(ROOT, 'docs', 'probe-endpoint.md')) as f:
            doc = f.read()
        block = re.search(r'```yaml\n(scrape_configs:.*?)```', doc, re.S).group(1)
        block = block.replace('llm-stream-exporter:9687', exporter_address)
        block = block.replace('[openai-mini, local-vllm]', '[planted]')
        block = re.sub(r'scrape_interval: \S+', 'scrape_interval: 2s', block)
        block = re.sub(r'scrape_timeout: \S+', 'scrape_timeout: 1500ms', block)
        assert exporter_address in block and '[planted]' in block, block
        self.block = block

    def __enter__(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        cfg = os.path.join(self.workdir, 'prometheus.yml')
        with open(cfg, 'w') as f:
            f.write('global: {scrape_interval: 2s, evaluation_interval: 2s}\n' + self.block)
        binary = shutil.which('prometheus') or '/usr/bin/prometheus'
        self.proc = Proc([binary, f'--config.file={cfg}', f'--storage.tsdb.path={self.workdir}/data',
                          f'--web.listen-address=127.0.0.1:{self.port}', '--log.level=warn'],
                         os.path.join(self.workdir, 'prometheus.log'))
        self.base = f'http://127.0.0.1:{self.port}'
        wait_for(lambda: http_get(self.base + '/-/ready', timeout=1)[0] == 200
                 if self.proc.alive() else 'exited', 30, what='prometheus ready')
        if not self.proc.alive():
            raise AssertionError('prometheus exited:\n' + self.proc.output())
        return self


def http_post_reload(ex):
    from harness import http_post
    return http_post(ex.base + '/-/reload')


def get_with_headers(url):
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


if __name__ == '__main__':
    unittest.main()
