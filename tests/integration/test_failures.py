"""Every failure reason of DESIGN §3, each produced by a scripted fault and
counted exactly once, while a healthy target keeps probing on time; and a
probe canceled by a reload, which is no failure: counted nowhere."""
import time
import unittest

from harness import (Exporter, TempDir, Upstream, free_port, http_post, render_config, wait_for)

REASONS = ['dns', 'connect', 'tls', 'http_4xx', 'http_429', 'http_5xx', 'http_other',
           'timeout_first_token', 'timeout_idle', 'timeout_total', 'truncated', 'protocol',
           'upstream_error', 'empty']


class FailureReasons(unittest.TestCase):
    def test_each_reason_counted_once_while_healthy_target_stays_on_time(self):
        with TempDir() as tmp, Upstream(tmp) as up, Upstream(tmp, tls=True, name='tls') as tls_up:
            closed_port = free_port()
            fast = '{first_token: 600ms, idle: 600ms, total: 20s}'
            faults = {
                'dns': {'url': 'http://no-such-host.invalid/v1'},
                'connect': {'url': f'http://127.0.0.1:{closed_port}/v1'},
                'tls': {'url': tls_up.url('chunks=5'), 'extra': [f'tls: {{ca_file: "{tls_up.pki["other_ca"]}"}}']},
                'http_4xx': {'url': up.url('status=404')},
                'http_429': {'url': up.url('status=429')},
                'http_5xx': {'url': up.url('status=503')},
                'http_other': {'url': up.url('status=999')},
                'timeout_first_token': {'url': up.url('no_answer=1'), 'extra': [f'timeout: {fast}']},
                'timeout_idle': {'url': up.url('ttft=50,gap=20,chunks=10,hang_after=3'),
                                 'extra': [f'timeout: {fast}']},
                'timeout_total': {'url': up.url('ttft=50,gap=100,chunks=100'),
                                  'extra': ['timeout: {first_token: 1s, idle: 1s, total: 1s}']},
                'truncated': {'url': up.url('ttft=50,gap=10,chunks=20,close_after=5')},
                'protocol': {'url': up.url('ttft=50,gap=10,chunks=20,bad_json_after=3')},
                'upstream_error': {'url': up.url('ttft=50,gap=10,chunks=20,error_after=3')},
                'empty': {'url': up.url('ttft=50,chunks=0')},
            }
            targets = [{'name': f'f-{reason}', **spec} for reason, spec in faults.items()]
            targets.append({'name': 'canceled', 'url': up.url('ttft=50,gap=10,chunks=20,hang_after=2'),
                            'extra': ['timeout: {first_token: 30s, idle: 30s, total: 60s}']})
            targets.append({'name': 'healthy', 'url': up.url('ttft=30,gap=10,chunks=10'),
                            'extra': ['interval: 1s']})
            config = render_config(targets)
            with Exporter(tmp, config) as ex:
                for reason in REASONS:
                    ex.wait_probes(f'f-{reason}', 1, timeout=15)
                # The canceled probe: the target hangs; a reload that changes it cancels the probe.
                time.sleep(0.5)
                ex.write_config(config.replace('hang_after=2', 'hang_after=3'))
                status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 200, body)
                wait_for(lambda: 'probe canceled by stop' in ex.proc.output(), 10,
                         what='the canceled probe')
                time.sleep(0.3)
                samples = ex.samples()
                canceled = [(n, l, v) for n, l, v in samples if l.get('target') == 'canceled' and v
                            and n in ('llm_stream_probe_failures_total', 'llm_stream_probes_total')]
                self.assertEqual(canceled, [])
                self.assertEqual(ex.rows('canceled'), [])
                for reason in REASONS:
                    target = f'f-{reason}'
                    counts = {l['reason']: v for n, l, v in samples
                              if n == 'llm_stream_probe_failures_total' and l.get('target') == target}
                    self.assertEqual(counts.get(reason), 1, f'{target}: {counts}')
                    others = {k: v for k, v in counts.items() if k != reason and v}
                    self.assertEqual(others, {}, f'{target}: {others}')
                    fails = [v for n, l, v in samples if n == 'llm_stream_probes_total'
                             and l.get('target') == target and l.get('result') == 'failure']
                    self.assertEqual(sum(fails), 1, target)

                # The healthy target kept its 1 s rhythm through all of that.
                wait_for(lambda: len(ex.rows('healthy')) >= 5, 10, what='5 healthy probes')
                rows = list(reversed(ex.rows('healthy')))
                self.assertTrue(all(r['ok'] for r in rows))
                starts = [r['ts'] for r in rows]
                for a, b in zip(starts, starts[1:]):
                    self.assertAlmostEqual(b - a, 1.0, delta=0.1)


class RetryAfter(unittest.TestCase):
    def test_429_retry_after_pushes_the_next_round_back_and_is_counted(self):
        # Both targets ask for a probe every 200 ms; the upstream answers the
        # limited one 429 with Retry-After: 1, so its rounds are a second
        # apart, one backoff each, while the other keeps its 200 ms rhythm.
        with TempDir() as tmp, Upstream(tmp) as up:
            config = render_config([
                {'name': 'limited', 'url': up.url('status=429'), 'extra': ['interval: 200ms']},
                {'name': 'steady', 'url': up.url('ttft=5,gap=1,chunks=3'), 'extra': ['interval: 200ms']},
            ])
            with Exporter(tmp, config) as ex:
                wait_for(lambda: len(ex.rows('limited')) >= 3, 10, what='3 limited probes')
                time.sleep(0.3)  # the backoff is counted as the next round is planned
                rows = list(reversed(ex.rows('limited')))
                samples = ex.samples()
                backoffs = {l['target']: v for n, l, v in samples if n == 'llm_stream_backoffs_total'}
                self.assertEqual(backoffs.get('limited'), len(rows), backoffs)
                self.assertEqual(backoffs.get('steady'), 0, backoffs)
                self.assertTrue(all(r['http_status'] == 429 for r in rows), rows)
                starts = [r['ts'] for r in rows]
                for a, b in zip(starts, starts[1:]):
                    self.assertGreaterEqual(b - a, 0.95)
                    self.assertLess(b - a, 1.5)
                steady = ex.rows('steady')
                self.assertGreaterEqual(len(steady), 2 * len(rows))


if __name__ == '__main__':
    unittest.main()
