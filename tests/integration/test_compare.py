"""`compare A.jsonl B.jsonl`: rows of two runs of the same endpoint name, B
with 15 ms of extra delay injected into every gap. The gaps must come out as
moved (95% CI excluding 0), TTFT as not moved (CI including 0), and the
verdict must say transport. Plus: determinism, A against itself, malformed
and missing rows files.

CompareWrittenRows: rows files the test writes itself (the values planted, so
the expected figures follow from them), through the real binary: a direct
stream against the same answers held by a buffer names the buffer; the
largest move is quoted (gap p95 +203 ms, not the gap p50 -20 ms); +3.8 ms is
below the minimum effect; --pair compares two targets of one file; --help
says how targets are matched.
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


def planted_row(target, prompt, ttft_ms, gaps_ms, i, host='h', stall_ms=250):
    """One row as `run` writes it, figures derived from the planted gaps
    (nearest-rank p50/p95 as the exporter computes them)."""
    ordered = sorted(gaps_ms)

    def rank(q):
        return ordered[max(1, -(-len(ordered) * q // 100)) - 1] if ordered else None

    return {'ts': 1700000000 + i, 'id': f'{i:016x}', 'target': target, 'model': 'm', 'prompt': prompt,
            'ok': True, 'reason': '', 'http_status': 200, 'ttft_ms': ttft_ms,
            'duration_ms': ttft_ms + sum(gaps_ms) + 1, 'tail_ms': 1, 'chunks': len(gaps_ms) + 1,
            'stalls': sum(1 for g in gaps_ms if g >= stall_ms), 'gap_p50_ms': rank(50),
            'gap_p95_ms': rank(95), 'gap_max_ms': ordered[-1], 'gaps_ms': gaps_ms, 'host': host}


def write_rows(path, rows):
    with open(path, 'w') as f:
        for r in rows:
            f.write(json.dumps(r) + '\n')
    return path


def runs(target, ttft_ms, gaps_ms, n=20, prompt='short'):
    """n runs with the same gaps and TTFTs 0.1 ms apart (a spread to resample)."""
    return [planted_row(target, prompt, ttft_ms + 0.1 * (i % 5), gaps_ms, i) for i in range(n)]


DIRECT_GAPS = [30] * 10 + [400] + [30] * 10 + [400]   # two stalls at the source
BUFFERED_GAPS = [0] * 22                              # the whole answer released at once


class CompareWrittenRows(unittest.TestCase):
    def setUp(self):
        self.tmp_ctx = TempDir()
        self.tmp = self.tmp_ctx.__enter__()

    def tearDown(self):
        self.tmp_ctx.__exit__(None, None, None)

    def compare_json(self, *args):
        p = run_cli(['compare', *args, '--format', 'json'])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_direct_to_buffered_names_the_buffer(self):
        a = write_rows(f'{self.tmp}/direct.jsonl', runs('svc', 300, DIRECT_GAPS))
        b = write_rows(f'{self.tmp}/nginx-gzip.jsonl', runs('svc', 2200, BUFFERED_GAPS))
        s = self.compare_json(a, b)['series'][0]
        self.assertEqual(s['shape'], 'buffer', s['verdict'])
        self.assertTrue(s['verdict'].startswith('TTFT grew (ttft median +1.90 s) while the gaps collapsed to ~0 '
                                                '(gap_p95 median 400.0 ms → 0.0 ms, stalls 2 → 0)'), s['verdict'])
        self.assertIn('a buffer between the hosts holds the stream and releases it at once', s['verdict'])
        self.assertNotIn('serving side', s['verdict'])
        p = run_cli(['compare', a, b])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('verdict: TTFT grew', p.stdout)

    def test_the_largest_move_is_quoted(self):
        # A: gap p50 40, p95 50, max 300 ms; B: p50 20 (-20), p95 253 (+203), max 300.
        a = write_rows(f'{self.tmp}/a.jsonl', runs('svc', 120, [40] * 18 + [50, 300]))
        b = write_rows(f'{self.tmp}/b.jsonl', runs('svc', 120, [20] * 16 + [253] * 3 + [300]))
        s = self.compare_json(a, b)['series'][0]
        self.assertEqual(s['shape'], 'transport')
        self.assertTrue(s['verdict'].startswith('gaps moved (gap_p95 median +203.0 ms; gap_p50 median -20.0 ms '
                                                'the other way), TTFT did not'), s['verdict'])
        self.assertIn('released in batches', s['verdict'])

    def test_a_small_shift_is_not_a_move(self):
        gaps = [20 + (k % 5) - 2 for k in range(20)]
        a = write_rows(f'{self.tmp}/a.jsonl', runs('svc', 120, gaps))
        b = write_rows(f'{self.tmp}/b.jsonl', runs('svc', 120, [g + 3.8 for g in gaps]))
        c = self.compare_json(a, b)
        s = c['series'][0]
        gap = next(x for x in s['changes'] if (x['part'], x['statistic']) == ('gap_p50', 'median'))
        self.assertAlmostEqual(gap['change'], 3.8, places=3)
        self.assertGreater(gap['ci_low'], 0)       # clear of the noise ...
        self.assertTrue(gap['excludes_zero'])
        self.assertEqual(gap['min_effect'], 5)     # ... but below max(5 ms, 10% of 20 ms)
        self.assertFalse(gap['moved'])
        self.assertFalse(s['gaps_moved'])
        # 20 gaps x 3.8 ms add up: the answers take 76 ms longer, which is a move.
        self.assertTrue(s['verdict'].startswith('TTFT and gaps did not move, duration did (duration median '
                                                '+76.0 ms)'), s['verdict'])
        self.assertEqual(c['min_effect_ms'], 5)
        p = run_cli(['compare', a, b])
        self.assertRegex(p.stdout, r'gap_p50\s+median\s+.*< min effect')
        # A lower floor makes it a move.
        s = self.compare_json(a, b, '--min-effect', '3ms')['series'][0]
        self.assertTrue(s['gaps_moved'], s['verdict'])

    def test_pair_compares_two_targets_of_one_file(self):
        rows = (runs('direct', 300, DIRECT_GAPS) + runs('via-nginx', 2200, BUFFERED_GAPS)
                + runs('other', 300, DIRECT_GAPS))
        f = write_rows(f'{self.tmp}/rows.jsonl', rows)
        one = self.compare_json(f, '--pair', 'direct=via-nginx')
        two = self.compare_json(f, f, '--pair', 'direct=via-nginx')
        self.assertEqual(one['series'], two['series'])
        self.assertEqual(one['matched_by'], 'pair')
        self.assertEqual(one['pairs'], [{'a': 'direct', 'b': 'via-nginx'}])
        self.assertEqual([s['target'] for s in one['series']], ['direct → via-nginx'])
        self.assertEqual(one['series'][0]['shape'], 'buffer')
        self.assertEqual(one['not_paired'], ['A: other', 'A: via-nginx', 'B: direct', 'B: other'])
        # Repeatable: one A target against two B targets.
        both = self.compare_json(f, '--pair', 'direct=via-nginx', '--pair', 'direct=other')
        self.assertEqual([s['shape'] for s in both['series']], ['buffer', 'same'])
        # By name, the file against itself moves nothing.
        same = self.compare_json(f, f)
        self.assertEqual(same['matched_by'], 'name')
        self.assertTrue(all(s['shape'] == 'same' for s in same['series']))

        p = run_cli(['compare', f, '--pair', 'direct=nginx'])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip(), f"compare: --pair 'direct=nginx': {f} has no target 'nginx' "
                                           "(it has: direct, other, via-nginx)")
        p = run_cli(['compare', f, '--pair', 'direct'])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--pair 'direct' is not A_TARGET=B_TARGET", p.stderr)
        p = run_cli(['compare', f])
        self.assertEqual(p.returncode, 2)
        self.assertIn('give two rows files (A B), or one with --pair A_TARGET=B_TARGET', p.stderr)

    def test_help_says_how_targets_are_matched(self):
        p = run_cli(['compare', '--help'])
        self.assertEqual(p.returncode, 0, p.stderr)
        text = ' '.join(p.stdout.split())
        self.assertIn('Targets are matched by name', text)
        self.assertIn('--pair A_TARGET=B_TARGET', text)
        self.assertIn('two targets of one file', text)
        self.assertIn('max(--min-effect, 10% of A)', text)


if __name__ == '__main__':
    unittest.main()
