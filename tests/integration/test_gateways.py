"""Gateways as clients meet them (issue 29, points 4-7).

A gateway that streams correct SSE without a Content-Type header (or under
text/plain) is measured exactly: the planted TTFT within tolerance, the planted
stall counted once, the row keeping the type it saw and flagging it. An HTTP
error keeps the upstream's own words in the row and the log. A routing header
(x-portkey-provider) is shown in /config, a second credential read from the
environment (x-portkey-api-key) or a file (Helicone-Auth) is sent upstream and
masked everywhere. A probe cut short by a reload or SIGTERM is no failure: no
row, no count.
"""
import json
import os
import signal
import time
import unittest
import urllib.parse

from harness import (Exporter, TempDir, Upstream, http_get, http_post, render_config, wait_for)
from run_helpers import read_rows, run_cli

TTFT_MS, GAP_MS, STALL_MS, STALL_AT = 150, 20, 400, 5
# The upstream writes on time within ~1 ms; the exporter stamps reads on arrival.
TOLERANCE_MS = 40
PLANTED = f'ttft={TTFT_MS},gap={GAP_MS},chunks=10,stall={STALL_AT}:{STALL_MS}'
GATEWAY_FAILURE = '{"status":"failure","message":"Something went wrong"}'
PORTKEY_KEY = 'pk-live-4f1c9a77e2b04d1e'
HELICONE_KEY = 'sk-helicone-b7e0c3d95a'


def quoted(text):
    return urllib.parse.quote(text, safe='')


class ContentType(unittest.TestCase):
    def assert_planted(self, row, content_type):
        self.assertTrue(row['ok'], row)
        self.assertGreaterEqual(row['ttft_ms'], TTFT_MS - 1)
        self.assertLessEqual(row['ttft_ms'], TTFT_MS + TOLERANCE_MS)
        self.assertEqual(row['chunks'], 10)
        self.assertEqual(row['stalls'], 1, row['gaps_ms'])
        detail = row['stalls_detail'][0]
        self.assertEqual(detail['at_chunk'], STALL_AT + 1)  # 1-based: the chunk that ended it
        self.assertAlmostEqual(detail['gap_ms'], STALL_MS, delta=TOLERANCE_MS)
        self.assertEqual(row['content_type'], content_type)
        self.assertTrue(row['unexpected_content_type'])

    def test_a_stream_without_or_with_another_content_type_is_measured_exactly(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            targets = [
                {'name': 'bare', 'url': up.url(PLANTED + ',no_content_type=1')},
                {'name': 'plain', 'url': up.url(PLANTED + ',content_type=text/plain')},
            ]
            config = render_config(targets, defaults={'interval': '1s'})
            with Exporter(tmp, config) as ex:
                ex.wait_probes('bare', 2, timeout=20)
                ex.wait_probes('plain', 2, timeout=20)
                for row in ex.rows('bare'):
                    self.assert_planted(row, '')
                for row in ex.rows('plain'):
                    self.assert_planted(row, 'text/plain')
                self.assertEqual(ex.value('llm_stream_probe_failures_total', target='bare'), 0)
                # Counted per target: every probe of each, none of a stream-typed target.
                samples = ex.samples()
                for name in ('bare', 'plain'):
                    def total(metric):
                        return sum(v for n, l, v in samples if n == metric and l.get('target') == name)
                    self.assertGreaterEqual(total('llm_stream_probes_total'), 2)
                    self.assertEqual(total('llm_stream_unexpected_content_type_total'),
                                     total('llm_stream_probes_total'), name)
                # And said once per target in the log, naming the type seen.
                log = ex.proc.output()
                said = [l for l in log.splitlines() if 'unexpected content type' in l]
                self.assertEqual(len(said), 2, said)
                self.assertTrue(any('target=bare content_type=""' in l for l in said), said)
            # `run` measures it too (it used to end "nothing was measured").
            cfg = os.path.join(tmp, 'run.yaml')
            with open(cfg, 'w') as f:
                f.write(render_config(targets[:1]))
            out = os.path.join(tmp, 'run.jsonl')
            p = run_cli(['run', '--config', cfg, '--runs', '2', '--out', out], timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = read_rows(out)
            self.assertEqual(len(rows), 2, p.stderr)
            for row in rows:
                self.assert_planted(row, '')


class ErrorBody(unittest.TestCase):
    def test_the_gateways_own_words_are_in_the_row_and_the_log(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            url = up.url('status=500,error_body=' + quoted(GATEWAY_FAILURE))
            with Exporter(tmp, render_config([{'name': 'gw', 'url': url}])) as ex:
                ex.wait_probes('gw', 1, timeout=15)
                row = ex.rows('gw')[0]
                log = ex.proc.output()
            self.assertEqual(row['reason'], 'http_5xx')
            self.assertEqual(row['http_status'], 500)
            self.assertEqual(row['error'], 'HTTP 500: ' + GATEWAY_FAILURE)
            failed = [l for l in log.splitlines() if 'msg="probe failed"' in l and 'target=gw' in l]
            self.assertTrue(failed, log[-2000:])
            self.assertIn(r'HTTP 500: {\"status\":\"failure\",\"message\":\"Something went wrong\"}',
                          failed[0])


class GatewayHeaders(unittest.TestCase):
    def test_routing_headers_shown_credentials_from_env_and_file_masked(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            key_file = os.path.join(tmp, 'helicone.key')
            with open(key_file, 'w') as f:
                f.write(HELICONE_KEY + '\n')
            headers = ('headers: {x-portkey-provider: openai, '
                       f'x-portkey-custom-host: "{up.base}/v1", '
                       'x-portkey-api-key: {env: PORTKEY_KEY}, '
                       f'Helicone-Auth: {{file: "{key_file}"}}}}')
            config = render_config([{'name': 'pk', 'url': up.url('ttft=20,gap=5,chunks=5'),
                                     'extra': [headers]}])
            with Exporter(tmp, config, env={'PORTKEY_KEY': PORTKEY_KEY}) as ex:
                ex.wait_probes('pk', 1, timeout=15)
                status, dump = http_get(ex.base + '/config')
                rows = http_get(ex.base + '/api/v1/probes')[1]
                log = ex.proc.output()
            self.assertEqual(status, 200, dump)
            self.assertIn('x-portkey-provider: openai', dump)
            self.assertIn(f'x-portkey-custom-host: {up.base}/v1', dump)
            self.assertIn('x-portkey-api-key: <secret>', dump)
            self.assertIn('Helicone-Auth: <secret>', dump)
            for where, text in (('/config', dump), ('rows', rows), ('log', log)):
                for secret in (PORTKEY_KEY, HELICONE_KEY):
                    self.assertNotIn(secret, text, f'{secret} leaked into {where}')
            # They did reach the wire.
            sent = up.requests()[0]['gateway_headers']
            self.assertEqual(sent.get('x-portkey-api-key'), PORTKEY_KEY)
            self.assertEqual(sent.get('helicone-auth'), HELICONE_KEY)
            self.assertEqual(sent.get('x-portkey-provider'), 'openai')

    def test_a_missing_variable_is_a_config_error_at_its_place(self):
        with TempDir() as tmp:
            cfg = os.path.join(tmp, 'c.yaml')
            with open(cfg, 'w') as f:
                f.write(render_config([{'name': 'pk', 'url': 'http://127.0.0.1:9/v1',
                                        'extra': ['headers: {x-portkey-api-key: {env: LSE_NO_SUCH_KEY_VAR}}']}]))
            env = {k: v for k, v in os.environ.items() if k != 'LSE_NO_SUCH_KEY_VAR'}
            p = run_cli(['check-config', '--config', cfg], env=env, timeout=30)
            self.assertNotEqual(p.returncode, 0)
            self.assertRegex(p.stderr + p.stdout,
                             r'c\.yaml:\d+:\d+: .*headers\.x-portkey-api-key\.env: environment '
                             r'variable LSE_NO_SUCH_KEY_VAR is not set')


class Cancellation(unittest.TestCase):
    def test_a_probe_cut_short_by_reload_or_sigterm_is_no_failure(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            rows_path = os.path.join(tmp, 'rows.jsonl')
            slow = {'name': 'slow', 'url': up.url('ttft=50,gap=10,chunks=20,hang_after=2'),
                    'extra': ['timeout: {first_token: 30s, idle: 30s, total: 60s}']}
            steady = {'name': 'steady', 'url': up.url('ttft=5,gap=1,chunks=3'),
                      'extra': ['interval: 200ms']}
            config = render_config([slow, steady],
                                   extra=f'rows: {{path: {json.dumps(rows_path)}}}\n')
            with Exporter(tmp, config) as ex:
                ex.wait_probes('steady', 2, timeout=15)
                time.sleep(0.5)  # the slow probe has its 2 chunks and waits
                # A reload that changes the target cancels its probe in flight.
                ex.write_config(config.replace('hang_after=2', 'hang_after=3'))
                status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 200, body)
                wait_for(lambda: 'probe canceled by stop' in ex.proc.output(), 5,
                         what='the canceled probe')
                samples = ex.samples()
                slow_failures = sum(v for n, l, v in samples if l.get('target') == 'slow' and n in (
                    'llm_stream_probe_failures_total', 'llm_stream_probes_total'))
                self.assertEqual(slow_failures, 0)
                self.assertEqual(ex.rows('slow'), [])
                # SIGTERM while the next probe of the same target waits.
                time.sleep(0.5)
                t0 = time.monotonic()
                code = ex.proc.stop(signal.SIGTERM, timeout=10)
                self.assertEqual(code, 0, ex.proc.output()[-2000:])
                self.assertLess(time.monotonic() - t0, 5)
            log = ex.proc.output()
            self.assertEqual(log.count('probe canceled by stop'), 2, log[-3000:])
            self.assertNotIn('msg="probe failed"', log)
            rows = read_rows(rows_path)
            self.assertGreaterEqual(len([r for r in rows if r['target'] == 'steady']), 2)
            self.assertEqual([r for r in rows if not r['ok']], [])
            self.assertEqual([r for r in rows if r['target'] == 'slow'], [])


if __name__ == '__main__':
    unittest.main()
