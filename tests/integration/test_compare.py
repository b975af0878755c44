"""`compare A.jsonl B.jsonl`: rows of two runs of the same endpoint name, B
with 15 ms of extra delay injected into every gap. The gaps must come out as
moved (95% CI excluding 0), TTFT as not moved (CI including 0), and the
verdict must say transport. Plus: determinism, A against itself, malformed
and missing rows files.
"""
import json
import os
import subprocess
import unittest

from harness import BIN, TempDir, Upstream
from run_helpers import realtime, run_cli, run_config

EXTRA_GAP_MS = 15


class CompareHosts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_ctx = TempDir()
        cls.tmp = cls.tmp_ctx.__enter__()
        cls.up_ctx = Upstream(cls.tmp)
        up = cls.up_ctx.__enter__()
        specs = {'a': 'ttft=120,gap=20,jitter=3,chunks=20',
                 'b': f'ttft=120,gap={20 + EXTRA_GAP_MS},jitter=3,chunks=20'}
        procs = {}
        for side, spec in specs.items():
            cfg = run_config(cls.tmp, [{'name': 'svc', 'url': up.url(spec), 'prompts': 'short, long'}],
                             name=f'{side}.yaml')
            # Both "hosts" run at the same time, as two machines would.
            procs[side] = subprocess.Popen([BIN, 'run', '--config', cfg, '--runs', '15', '--warmup', '2',
                                            '--seed', '1', '--out', f'{cls.tmp}/{side}.jsonl'],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                           preexec_fn=realtime)
        for side, proc in procs.items():
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]
        cls.a, cls.b = f'{cls.tmp}/a.jsonl', f'{cls.tmp}/b.jsonl'

    @classmethod
    def tearDownClass(cls):
        cls.up_ctx.__exit__(None, None, None)
        cls.tmp_ctx.__exit__(None, None, None)

    def compare_json(self, a, b):
        p = run_cli(['compare', a, b, '--format', 'json'])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_gaps_moved_ttft_did_not(self):
        c = self.compare_json(self.a, self.b)
        self.assertEqual(sorted(s['prompt'] for s in c['series']), ['long', 'short'])
        for s in c['series']:
            ch = {(x['part'], x['statistic']): x for x in s['changes']}
            with self.subTest(prompt=s['prompt']):
                self.assertEqual((s['ok_a'], s['ok_b']), (15, 15))
                gap = ch[('gap_p50', 'median')]
                self.assertTrue(gap['moved'], gap)
                self.assertGreater(gap['ci_low'], 0, gap)
                self.assertAlmostEqual(gap['change'], EXTRA_GAP_MS, delta=3)
                self.assertTrue(ch[('gap_p95', 'median')]['moved'])
                self.assertTrue(ch[('duration', 'median')]['moved'])
                for stat in ('median', 'p95'):
                    ttft = ch[('ttft', stat)]
                    self.assertFalse(ttft['moved'], ttft)
                    self.assertLessEqual(ttft['ci_low'], 0, ttft)
                    self.assertGreaterEqual(ttft['ci_high'], 0, ttft)
                self.assertFalse(ch[('stalls', 'median')]['moved'])
                self.assertTrue(s['gaps_moved'])
                self.assertFalse(s['ttft_moved'])
                self.assertTrue(s['verdict'].startswith('gaps moved'), s['verdict'])
                self.assertIn('TTFT did not: transport between the hosts', s['verdict'])
        self.assertIn('(all 2 prompts)', c['verdict'])

        # The table says it in words, and the same rows always give the same numbers.
        p1 = run_cli(['compare', self.a, self.b])
        p2 = run_cli(['compare', self.a, self.b])
        self.assertEqual(p1.returncode, 0, p1.stderr)
        self.assertEqual(p1.stdout, p2.stdout)
        self.assertIn('verdict: gaps moved', p1.stdout)
        self.assertRegex(p1.stdout, r'gap_p50\s+median\s+.*moved')

    def test_a_against_itself_moves_nothing(self):
        c = self.compare_json(self.a, self.a)
        for s in c['series']:
            self.assertFalse(any(x['moved'] for x in s['changes']), s)
            self.assertTrue(s['verdict'].startswith('nothing moved'), s['verdict'])

    def test_reverse_direction(self):
        c = self.compare_json(self.b, self.a)
        for s in c['series']:
            gap = next(x for x in s['changes'] if x['part'] == 'gap_p50' and x['statistic'] == 'median')
            self.assertLess(gap['ci_high'], 0)
            self.assertTrue(s['verdict'].startswith('gaps moved'))

    def test_malformed_rows_file(self):
        with open(self.a) as f:
            lines = f.readlines()
        bad = os.path.join(self.tmp, 'bad.jsonl')
        with open(bad, 'w') as f:
            f.writelines(lines[:2] + ['{"ts": 1, "target": "svc", "ok": tru\n'] + lines[2:])
        p = run_cli(['compare', self.a, bad])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertTrue(p.stderr.startswith(f'compare: {bad}:3: '), p.stderr)
        self.assertEqual(p.stdout, '')

        missing = os.path.join(self.tmp, 'missing.jsonl')
        p = run_cli(['compare', missing, self.b])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip(), f'compare: {missing}: cannot read rows file: No such file or directory')

    def test_nothing_in_common(self):
        other = os.path.join(self.tmp, 'other.jsonl')
        with open(self.a) as f, open(other, 'w') as g:
            for line in f:
                row = json.loads(line)
                row['prompt'] = 'other'
                g.write(json.dumps(row) + '\n')
        p = run_cli(['compare', self.a, other])
        self.assertEqual(p.returncode, 2)
        self.assertIn('no target/prompt in common', p.stderr)


if __name__ == '__main__':
    unittest.main()
