"""`run` measures what the upstream scripted: every row's TTFT and every gap
agree with the upstream's own send times (its log) within 5 ms, and warmup
probes never reach the rows or the summary.

Each request of target `a` has its own random gap jitter, so a row can be
paired with exactly one upstream request by its gap sequence: the warmup
requests match no row.
"""
import json
import unittest

from harness import TempDir, Upstream
from run_helpers import content_sends, read_rows, run_cli, run_config, series

TOL_MS = 5.0


class RunClock(unittest.TestCase):
    def test_rows_match_the_upstream_and_warmup_is_discarded(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            specs = {'a': 'ttft=150,gap=20,jitter=8,chunks=30,stall=10:300',
                     'b': 'ttft=60,gap=12,chunks=25,tail=40'}
            targets = [{'name': 'a', 'url': up.url(specs['a']), 'prompts': 'short, long'},
                       {'name': 'b', 'url': up.url(specs['b'])}]
            cfg = run_config(tmp, targets)
            out = f'{tmp}/rows.jsonl'
            p = run_cli(['run', '--config', cfg, '--runs', '3', '--warmup', '2', '--seed', '5', '--out', out,
                         '--format', 'json'], rt=True)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            summary = json.loads(p.stdout)
            rows = read_rows(out)

            # Warmup: 2 per target, counted, never a row, never in the summary.
            requests = [r for r in up.requests() if r.get('endpoint') == 'chat']
            self.assertEqual(len(requests), 3 * 3 + 2 * 2)
            self.assertEqual(len(rows), 9)
            self.assertEqual(summary['runs'], 9)
            self.assertEqual(summary['warmup_discarded'], 4)
            self.assertEqual([series(summary, 'a', pr)['runs'] for pr in ('short', 'long')], [3, 3])
            self.assertEqual(series(summary, 'b')['runs'], 3)
            self.assertIn('warmup 2/4', p.stderr)

            for name, spec in specs.items():
                reqs = [r for r in requests if r['spec'] == spec]
                got = [r for r in rows if r['target'] == name]
                # The plan puts every warmup first: the first 2 requests of each target.
                warm, measured = reqs[:2], reqs[2:]
                self.assertEqual(len(measured), len(got), name)
                for i, (row, req) in enumerate(zip(got, measured)):
                    sends = content_sends(req)
                    true_ttft = (sends[0] - req['t_request']) * 1000
                    true_gaps = [(b - a) * 1000 for a, b in zip(sends, sends[1:])]
                    with self.subTest(target=name, run=i):
                        self.assertTrue(row['ok'], row)
                        self.assertAlmostEqual(row['ttft_ms'], true_ttft, delta=TOL_MS)
                        # Against the script: the Python upstream is never early but may
                        # send late on a busy machine; the check that matters is the one
                        # above, against when it really sent.
                        scripted = float(spec.split('ttft=')[1].split(',')[0])
                        self.assertGreater(row['ttft_ms'], scripted - TOL_MS)
                        self.assertLess(row['ttft_ms'], scripted + 50)
                        self.assertEqual(len(row['gaps_ms']), len(true_gaps))
                        errors = [abs(m - t) for m, t in zip(row['gaps_ms'], true_gaps)]
                        self.assertLess(max(errors), TOL_MS, sorted(errors)[-3:])
                        # The planted stall and tail, against the script as the TTFT is.
                        if name == 'a':
                            self.assertGreater(row['gaps_ms'][9], 300 - TOL_MS)
                            self.assertLess(row['gaps_ms'][9], 300 + 50)
                            self.assertEqual(row['stalls'], 1)
                        else:
                            self.assertGreater(row['tail_ms'], 40 - TOL_MS)
                            self.assertLess(row['tail_ms'], 40 + 50)
                if name == 'a':
                    # The jittered gap sequences of the warmup requests match no row.
                    for req in warm:
                        sends = content_sends(req)
                        w = [(b - a) * 1000 for a, b in zip(sends, sends[1:])]
                        for row in got:
                            self.assertGreater(max(abs(m - t) for m, t in zip(row['gaps_ms'], w)), TOL_MS)

            # The summary is made of the rows: TTFT p50 of b is the median row TTFT.
            b_ttft = sorted(r['ttft_ms'] for r in rows if r['target'] == 'b')
            self.assertAlmostEqual(series(summary, 'b')['fields']['ttft_ms']['p50'], b_ttft[1], places=2)


if __name__ == '__main__':
    unittest.main()
