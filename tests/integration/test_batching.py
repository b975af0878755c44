"""Chunks that carry several tokens (issue 31 §4): `run` against a batching
upstream and a one-token-per-event one.

  batched    OpenAI chat, 4 tokens in every SSE event (tpc=4)   -> 4.0 a chunk, the note
  single     OpenAI chat, 1 token an event                       -> 1.0 a chunk, no note
  thinking   Anthropic, 3 tokens an event, 2 thinking events
             the target does not count as content (tpc=3)       -> 3.0 a chunk, the note
  no-usage   OpenAI chat, tpc=4 but no usage in the stream      -> null, no note

Every figure is what the upstream was told: usage counts tokens (chunks x tpc),
and the exporter divides by the chunks that carried them, so the rows must say
4.0, 1.0 and 3.0 exactly. The note must appear in `run`'s table, its JSON, and
the HTML report made from the rows file (the rows reader), and nowhere for the
one-token stream. Then `serve` on the same upstream: its rows carry the figure too, and
the llm_stream_tokens_per_chunk histogram sums exactly 4 (1) per probe counted.
"""
import json
import re
import unittest

from harness import Exporter, TempDir, Upstream, render_config, wait_for
from run_helpers import read_rows, run_cli, run_config, series

NOTE = 'the server sends {} tokens per chunk: gaps are per chunk, not per token'

# name -> (target spec for run_config, tokens per chunk in the rows, note expected)
def cases(up):
    return {
        'batched': ({'url': up.url('ttft=40,gap=10,chunks=12,tpc=4')}, 4.0, True),
        'single': ({'url': up.url('ttft=40,gap=10,chunks=12')}, 1.0, False),
        'thinking': ({'url': up.url('ttft=40,gap=10,chunks=12,reasoning=2,tpc=3'),
                      'extra': ['api: anthropic-messages']}, 3.0, True),
        'no-usage': ({'url': up.url('ttft=40,gap=10,chunks=12,tpc=4,usage=0')}, None, False),
    }


class Batching(unittest.TestCase):
    def test_run_rows_note_and_report(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            want = cases(up)
            targets = [dict(name=name, **spec) for name, (spec, _, _) in want.items()]
            cfg = run_config(tmp, targets)
            rows_path = f'{tmp}/rows.jsonl'
            p = run_cli(['run', '--config', cfg, '--runs', '5', '--warmup', '0', '--concurrency', '4',
                         '--out', rows_path, '--format', 'json'])
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            summary = json.loads(p.stdout)

            rows = read_rows(rows_path)
            self.assertEqual(len(rows), 5 * len(want))
            for name, (_, tpc, noted) in want.items():
                with self.subTest(target=name):
                    mine = [r for r in rows if r['target'] == name]
                    self.assertEqual(len(mine), 5)
                    for r in mine:
                        self.assertTrue(r['ok'], r)
                        # Content chunks per event, as scheduled: batching does not change them.
                        self.assertEqual(r['chunks'], 10 if name == 'thinking' else 12, r)
                        self.assertEqual(r['tokens_per_chunk'], tpc, r)
                    s = series(summary, name)
                    notes = [n for n in s['notes'] if n['note'] == 'tokens_per_chunk']
                    if noted:
                        self.assertEqual(len(notes), 1, s['notes'])
                        self.assertTrue(notes[0]['text'].startswith(NOTE.format(int(tpc))), notes)
                        self.assertEqual(notes[0]['numbers']['tokens_per_chunk_p50'], tpc)
                        self.assertEqual(s['fields']['tokens_per_chunk']['p50'], tpc)
                    else:
                        self.assertEqual(notes, [], s['notes'])
            # usage=0: no usage, so no figure, while tokens/s is unknown too.
            self.assertIsNone(series(summary, 'no-usage')['fields']['tokens_per_chunk'])
            # What the upstream was told, from its own log.
            told = {r['spec']: r['tpc'] for r in up.requests()}
            self.assertEqual(sorted(set(told.values())), [1, 3, 4])

            # The table says it under its series, once per noted series.
            p = run_cli(['run', '--config', cfg, '--runs', '5', '--warmup', '0', '--concurrency', '4',
                         '--out', f'{tmp}/rows2.jsonl'])
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            self.assertRegex(p.stdout, r'\nbatched +short +5/5 [^\n]*\n(    [^\n]*\n)*?    note: '
                             + re.escape(NOTE.format(4)))
            self.assertRegex(p.stdout, r'\nthinking +short +5/5 [^\n]*\n(    [^\n]*\n)*?    note: '
                             + re.escape(NOTE.format(3)))
            self.assertEqual(p.stdout.count('note: '), 2, p.stdout)

            # The HTML report from the rows file: the figure read back, the same note.
            p = run_cli(['report', rows_path, '--out', f'{tmp}/report.html'])
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            with open(f'{tmp}/report.html') as f:
                html = f.read()
            self.assertEqual(html.count('data-note="tokens_per_chunk"'), 2)
            self.assertIn('note: ' + NOTE.format(4), html)
            self.assertIn('note: ' + NOTE.format(3), html)

    def test_serve_rows_carry_tokens_per_chunk(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            want = cases(up)
            targets = [dict(name=name, **want[name][0]) for name in ('batched', 'single')]
            cfg = render_config(targets, defaults={'interval': '300ms'})
            with Exporter(tmp, cfg) as ex:
                for name in ('batched', 'single'):
                    ex.wait_probes(name, 3, result='success')
                for name in ('batched', 'single'):
                    rows = ex.rows(name)
                    self.assertGreaterEqual(len(rows), 3)
                    self.assertEqual({r['tokens_per_chunk'] for r in rows}, {want[name][1]}, rows)
                    # llm_stream_tokens_per_chunk: one observation per probe, each the
                    # row's figure, so the sum is exactly that many times the count.
                    samples = ex.samples()
                    pick = lambda suffix: sum(v for n, l, v in samples  # noqa: E731
                                              if n == 'llm_stream_tokens_per_chunk' + suffix
                                              and l.get('target') == name)
                    count, total = pick('_count'), pick('_sum')
                    self.assertGreaterEqual(count, 3, name)
                    self.assertEqual(total, want[name][1] * count, name)


if __name__ == '__main__':
    unittest.main()
