"""`run` diagnoses each of the four shapes of DESIGN §7 (and a healthy stream
as none) against scripted streams: one run, one target per case, each target
diagnosed on its own rows.

  healthy    steady 20 ms gaps, 300 ms TTFT                    -> none
  queue      1.3 s TTFT, tight 15 ms gaps                       -> queue
  transport  bursts of 8 events per write and planted stalls    -> transport
  nginx-gzip a real nginx with gzip on in front of a steady
             stream: the answer arrives in one burst            -> transport
  long       180 chunks, flat 10 ms gaps, 1.9 s per answer      -> long answer
  spread     a front that holds every 4th request 1.2 s         -> shared capacity

The thresholds are the documented defaults except queue_ttft_seconds (1s) and
long_answer_duration_seconds (1.5s), lowered in the config's `diagnosis:` so the
test stays short; min_probes is the default (5) with 10 runs per case. With 10 runs the
nearest-rank p95 is the slowest run, so the healthy case has a TTFT (300 ms)
that a scheduling hiccup cannot double.
"""
import json
import unittest

from harness import Nginx, TempDir, Upstream
from run_helpers import HoldingFront, held_shapes, run_cli, run_config, series


class Shapes(unittest.TestCase):
    def test_each_shape_diagnosed_and_healthy_is_none(self):
        with TempDir() as tmp, Upstream(tmp) as up, \
                Nginx(tmp, up.base, {'gz': ['proxy_buffering on', 'gzip on', 'gzip_types text/event-stream',
                                            'gzip_min_length 0']}) as ng, \
                HoldingFront(up.port, every=4, hold_ms=1200) as front:
            cases = {
                'healthy': ({'url': up.url('ttft=300,gap=20,jitter=3,chunks=20')}, []),
                'queue': ({'url': up.url('ttft=1300,gap=15,chunks=12')}, ['queue']),
                'transport': ({'url': up.url('ttft=80,gap=15,chunks=48,per_write=8,stall=16:400;32:400')},
                              ['transport']),
                # A direct upstream that pauses by itself: the pause is the source's.
                'pause': ({'url': up.url('ttft=80,gap=20,chunks=40,stall=12:400;28:400')}, ['generation']),
                'nginx-gzip': ({'url': ng.url('gz', 'ttft=80,gap=15,chunks=40'),
                                'extra': ['accept_encoding: [gzip]']}, ['transport']),
                # A real queue behind the buffer: the buffer is named, the queue left open.
                'queue-gz': ({'url': ng.url('gz', 'ttft=1300,gap=15,chunks=12'),
                              'extra': ['accept_encoding: [gzip]']}, ['transport']),
                'long': ({'url': up.url('ttft=50,gap=10,jitter=2,chunks=180')}, ['long_answer']),
                'spread': ({'url': front.url('ttft=60,gap=15,chunks=20')}, ['shared_capacity']),
            }
            targets = [dict(name=name, **spec) for name, (spec, _) in cases.items()]
            cfg = run_config(tmp, targets, extra='diagnosis:\n  queue_ttft_seconds: 1s\n'
                                                 '  long_answer_duration_seconds: 1500ms\n')
            p = run_cli(['run', '--config', cfg, '--runs', '10', '--warmup', '1', '--concurrency', '3',
                         '--seed', '11', '--out', f'{tmp}/rows.jsonl', '--format', 'json'], rt=True)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            summary = json.loads(p.stdout)
            for name, (_, expected) in cases.items():
                s = series(summary, name)
                why = {v['shape']: v['why'] for v in s['diagnosis']}
                with self.subTest(case=name):
                    self.assertEqual(s['ok'], 10, s)
                    self.assertEqual(held_shapes(s), sorted(expected), json.dumps(why, indent=1))
                    self.assertEqual(s['shapes'], ', '.join(sorted(expected)).replace('_', ' ') or 'none')

            # The numbers behind the verdicts are the scripted ones.
            q = {v['shape']: v['numbers'] for v in series(summary, 'queue')['diagnosis']}['queue']
            self.assertAlmostEqual(q['ttft_p50_seconds'], 1.3, delta=0.02)
            sp = {v['shape']: v['numbers'] for v in series(summary, 'spread')['diagnosis']}['shared_capacity']
            self.assertGreaterEqual(sp['ttft_p95_seconds'], 1.2)
            self.assertLess(sp['ttft_p50_seconds'], 0.5)
            self.assertEqual(front.held, [3, 7])  # of 11 requests: 1 warmup + 10 runs
            # The pause and the buffer are told apart by how the streams resumed.
            pause = {v['shape']: v['numbers'] for v in series(summary, 'pause')['diagnosis']}['generation']
            self.assertEqual(pause['burst_stall_share'], 0.0)
            self.assertEqual(pause['stalled_share'], 1.0)
            gz = {v['shape']: v['numbers'] for v in series(summary, 'nginx-gzip')['diagnosis']}['transport']
            self.assertEqual(gz['all_at_once_share'], 1.0)
            qgz = {v['shape']: v['why'] for v in series(summary, 'queue-gz')['diagnosis']}
            self.assertIn('cannot be seen from here', qgz['queue'])
            self.assertNotIn('not a queue', qgz['queue'])
            # ... and so the queue's verdict is "cannot tell" (null), not "does not hold" (false);
            # a direct queue is true and a healthy stream's false.
            holds = {name: {v['shape']: v['holds'] for v in series(summary, name)['diagnosis']}
                     for name in ('queue-gz', 'queue', 'healthy')}
            self.assertIsNone(holds['queue-gz']['queue'])
            self.assertIs(holds['queue-gz']['transport'], True)
            self.assertIs(holds['queue']['queue'], True)
            self.assertIs(holds['healthy']['queue'], False)

            # compare, direct -> through nginx gzip, on the rows of this run: the buffer is named.
            p = run_cli(['compare', f'{tmp}/rows.jsonl', '--pair', 'pause=nginx-gzip', '--format', 'json'])
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertIn('a buffer between the hosts', p.stdout)

            # The table format says the same in words.
            small = run_config(tmp, [t for t in targets if t['name'] in ('healthy', 'queue')], name='small.yaml',
                               extra='diagnosis:\n  queue_ttft_seconds: 1s\n')
            p = run_cli(['run', '--config', small, '--runs', '5', '--warmup', '0', '--concurrency', '2',
                         '--seed', '11', '--out', f'{tmp}/rows2.jsonl'])
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            self.assertRegex(p.stdout, r'\nqueue +short +5/5 .* queue\n    queue: TTFT p50 1\.3\d s > 1\.00 s')
            self.assertRegex(p.stdout, r'\nhealthy +short +5/5 .* none\n')

            # The queue behind the buffer, in words: "queue?" and its evidence,
            # [?] in the full table.
            gz = run_config(tmp, [t for t in targets if t['name'] == 'queue-gz'], name='gz.yaml',
                            extra='diagnosis:\n  queue_ttft_seconds: 1s\n')
            p = run_cli(['run', '--config', gz, '--runs', '5', '--warmup', '1', '--concurrency', '5',
                         '--out', f'{tmp}/rows3.jsonl', '--explain'])
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            self.assertIn('  diagnosis: transport, queue?, generation?\n', p.stdout)
            self.assertIn('    [?] queue ', p.stdout)
            self.assertIn('    [x] transport ', p.stdout)
            self.assertIn('    [?] generation ', p.stdout)

    def test_a_long_think_then_a_normal_stream_is_queue_not_transport(self):
        # A reasoning model's shape read directly: 6 s before the first chunk, then
        # 30 chunks 20 ms apart, none together. The wait is 91% of each answer's
        # duration, yet no chunk was held: queue, not transport.
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = run_config(tmp, [{'name': 'think', 'url': up.url('ttft=6000,gap=20,chunks=30')}],
                             defaults={'timeout': '{first_token: 10s, idle: 5s, total: 20s}'})
            p = run_cli(['run', '--config', cfg, '--runs', '5', '--warmup', '0', '--concurrency', '5',
                         '--out', f'{tmp}/rows.jsonl', '--format', 'json'], rt=True)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            s = series(json.loads(p.stdout), 'think')
            self.assertEqual(s['ok'], 5, s)
            verdicts = {v['shape']: v for v in s['diagnosis']}
            why = json.dumps({k: v['why'] for k, v in verdicts.items()}, indent=1)
            self.assertEqual(held_shapes(s), ['queue'], why)
            self.assertIs(verdicts['transport']['holds'], False, why)
            self.assertEqual(verdicts['transport']['numbers']['all_at_once_share'], 0.0, why)
            self.assertEqual(verdicts['transport']['numbers']['coalesced_share'], 0.0, why)
            self.assertAlmostEqual(verdicts['queue']['numbers']['ttft_p50_seconds'], 6.0, delta=0.1)


if __name__ == '__main__':
    unittest.main()
