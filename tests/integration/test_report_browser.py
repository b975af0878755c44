"""The HTML report of a real run renders in headless Chromium (Debian's
`chromium`): its inline self-check passes (data-selfcheck="ok" on <html>), the
DOM has one timeline row per measured run, the console shows no errors, the
screenshot is a real picture, and the file loads nothing from anywhere.

`report ROWS...` renders the same report from rows files afterwards: two
runs' rows (before/after) side by side, labelled by file, checked the same
way in Chromium; and bad input is refused with FILE:LINE for every bad line
(ReportFromRowsCli, no browser needed).
"""
import json
import os
import re
import shutil
import subprocess
import unittest

from harness import TempDir, Upstream
from run_helpers import run_cli, run_config

CHROMIUM = '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run', '--hide-scrollbars',
         '--enable-logging=stderr', '--v=0']


def chromium(tmp, *args):
    profile = os.path.join(tmp, 'chromium-profile')
    p = subprocess.run([CHROMIUM] + FLAGS + [f'--user-data-dir={profile}'] + list(args),
                       capture_output=True, text=True, timeout=120)
    shutil.rmtree(profile, ignore_errors=True)
    return p


def console_errors(stderr):
    """Console lines Chromium logged for the page (it logs console messages and
    uncaught exceptions as "INFO:CONSOLE(...)" lines). The report logs nothing
    when all is well, so every such line is an error."""
    return [line for line in stderr.splitlines() if ':CONSOLE' in line or 'Uncaught' in line]


@unittest.skipUnless(os.path.exists(CHROMIUM), f'{CHROMIUM} is not installed (apt-get install chromium)')
class ReportInChromium(unittest.TestCase):
    def test_report_renders_with_one_timeline_row_per_run(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = run_config(tmp, [{'name': 'svc', 'url': up.url('ttft=90,gap=15,jitter=4,chunks=40,stall=20:600'),
                                    'prompts': 'short, long'}])
            report = os.path.join(tmp, 'report.html')
            p = run_cli(['run', '--config', cfg, '--runs', '5', '--warmup', '1', '--seed', '2',
                         '--out', f'{tmp}/rows.jsonl', '--report', report], rt=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(report) as f:
                html = f.read()

            # Self-contained: nothing fetched (no src/href to anywhere, no CSS url()/@import).
            self.assertIsNone(re.search(r'(src|href)\s*=\s*["\']?(https?:|//)', html))
            self.assertNotIn('url(', html)
            self.assertNotIn('@import', html)
            self.assertIn("default-src 'none'", html)  # and the page forbids it anyway

            url = 'file://' + report
            dom = chromium(tmp, '--dump-dom', url)
            self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
            self.assertRegex(dom.stdout, r'<html[^>]*data-selfcheck="ok"', dom.stdout[:300])
            self.assertEqual(len(re.findall(r'<g class="run [a-z]+" data-run="\d+"', dom.stdout)), 10)
            self.assertEqual(len(re.findall(r'<section class="series"', dom.stdout)), 2)
            self.assertEqual(console_errors(dom.stderr), [])
            # The planted stall is marked once in each of the 10 timeline rows.
            self.assertEqual(len(re.findall(r'<rect class="stall"', dom.stdout)), 10)

            shot = os.path.join(tmp, 'report.png')
            p = chromium(tmp, f'--screenshot={shot}', '--window-size=1200,2600', url)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertEqual(console_errors(p.stderr), [])
            with open(shot, 'rb') as f:
                png = f.read()
            self.assertTrue(png.startswith(b'\x89PNG\r\n\x1a\n'))
            self.assertGreater(len(png), 10 * 1024)
            if os.environ.get('LSE_KEEP_TMP'):
                print('report:', report, 'screenshot:', shot)

    def test_self_check_catches_a_broken_page(self):
        """The check can fail: a report missing a timeline row is flagged."""
        with TempDir() as tmp, Upstream(tmp) as up:
            cfg = run_config(tmp, [{'name': 'svc', 'url': up.url('ttft=30,gap=10,chunks=10')}])
            report = os.path.join(tmp, 'report.html')
            p = run_cli(['run', '--config', cfg, '--runs', '3', '--warmup', '0', '--out', f'{tmp}/rows.jsonl',
                         '--report', report])
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(report) as f:
                html = f.read()
            broken = re.sub(r'<g class="run ok" data-run="2".*?</g>', '', html, count=1, flags=re.S)
            self.assertNotEqual(broken, html)
            with open(report, 'w') as f:
                f.write(broken)
            dom = chromium(tmp, '--dump-dom', 'file://' + report)
            self.assertIn('data-selfcheck="failed: expected 3 timeline rows, found 2"', dom.stdout)
            self.assertTrue(console_errors(dom.stderr), dom.stderr[-2000:])

    def test_report_from_rows_files_renders_before_and_after(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            rows = {}
            for side, spec in (('before', 'ttft=60,gap=12,chunks=25,stall=10:400'),
                               ('after', 'ttft=150,gap=12,chunks=25')):
                cfg = run_config(tmp, [{'name': 'svc', 'url': up.url(spec)}], name=f'{side}.yaml')
                rows[side] = f'{tmp}/{side}.jsonl'
                p = run_cli(['run', '--config', cfg, '--runs', '4', '--warmup', '0', '--seed', '3',
                             '--out', rows[side]], rt=True)
                self.assertEqual(p.returncode, 0, p.stderr)
            report = os.path.join(tmp, 'report.html')
            p = run_cli(['report', rows['before'], rows['after'], '--out', report])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, '')
            self.assertIn(f'report: 2 series from before.jsonl (4 rows), after.jsonl (4 rows) -> {report}',
                          p.stderr)
            with open(report) as f:
                html = f.read()
            self.assertIsNone(re.search(r'(src|href)\s*=\s*["\']?(https?:|//)', html))
            self.assertIn("default-src 'none'", html)
            self.assertIn('<title>llm-stream-exporter report · before.jsonl vs after.jsonl</title>', html)
            # The header names each file with its own host, time range and rows: no one
            # "took" for two runs, no warmup count that the rows cannot tell.
            header = re.search(r'<div class="meta made-from">.*?</div>', html, re.S).group(0)
            self.assertNotIn('seed', header)
            self.assertNotIn('took', header)
            self.assertNotIn('warmup runs discarded', header)
            self.assertIn('warmups: none in the rows', header)
            for name in ('before', 'after'):
                self.assertRegex(header, rf'<li data-source="{name}.jsonl"><b>{name}.jsonl</b> \({re.escape(tmp)}/'
                                         rf'{name}.jsonl\) · host <b>[^<]+</b> · <b>[0-9: -]+</b> – '
                                         r'<b>[0-9: -]+ UTC</b> \([0-9.]+ (ms|s)\) · 4 rows \(4 ok\)</li>')
            # Before and after share one time axis: the same tick labels in both sections.
            ticks = [re.findall(r'<text class="tick" [^>]*text-anchor="middle">([^<]*)</text>', sec)
                     for sec in html.split('<section class="series"')[1:]]
            self.assertEqual(len(ticks), 2)
            self.assertEqual(ticks[0], ticks[1])

            url = 'file://' + report
            dom = chromium(tmp, '--dump-dom', url)
            self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
            self.assertRegex(dom.stdout, r'<html[^>]*data-selfcheck="ok"', dom.stdout[:300])
            self.assertEqual(len(re.findall(r'<g class="run [a-z]+" data-run="\d+"', dom.stdout)), 8)
            self.assertEqual(len(re.findall(r'<section class="series"', dom.stdout)), 2)
            self.assertEqual(console_errors(dom.stderr), [])
            # Before and after apart, before first: each labelled by its file.
            before, after = dom.stdout.find('svc @ before.jsonl'), dom.stdout.find('svc @ after.jsonl')
            self.assertGreaterEqual(before, 0)
            self.assertGreater(after, before)
            # The stall planted in "before" is marked once in each of its 4 rows; "after" has none.
            self.assertEqual(len(re.findall(r'<rect class="stall"', dom.stdout)), 4)

            shot = os.path.join(tmp, 'report.png')
            p = chromium(tmp, f'--screenshot={shot}', '--window-size=1200,2600', url)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertEqual(console_errors(p.stderr), [])
            with open(shot, 'rb') as f:
                png = f.read()
            self.assertTrue(png.startswith(b'\x89PNG\r\n\x1a\n'))
            self.assertGreater(len(png), 10 * 1024)


def row(i, target='svc', prompt='short', host='h'):
    return json.dumps({'ts': 1700000000 + i, 'target': target, 'prompt': prompt, 'ok': True, 'ttft_ms': 100,
                       'duration_ms': 300, 'chunks': 3, 'gaps_ms': [20, 30], 'gap_p50_ms': 20,
                       'gap_p95_ms': 30, 'gap_max_ms': 30, 'stalls': 0, 'host': host}) + '\n'


class ReportFromRowsCli(unittest.TestCase):
    def test_every_bad_line_is_listed_and_nothing_is_written(self):
        with TempDir() as tmp:
            good = f'{tmp}/good.jsonl'
            bad = f'{tmp}/bad.jsonl'
            with open(good, 'w') as f:
                f.write(row(1) + row(2))
            with open(bad, 'w') as f:
                f.write(row(1) + '{"ts": 1, "target": "svc", "ok": tru\n' + row(2) + '\n'
                        + '{"target": "svc", "ok": true}\n' + '{"ts": 1, "target": "sv')
            out = f'{tmp}/report.html'
            p = run_cli(['report', good, bad, '--out', out])
            self.assertEqual(p.returncode, 2)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 4, p.stderr)
            # The cut last line is a warning (a killed writer), the others are errors.
            self.assertEqual(lines[0], f'report: warning: {bad}:6: the last line (23 bytes) has no newline '
                                       'and is not a row: the writer was stopped mid-row; skipped')
            self.assertTrue(lines[1].startswith(f'report: {bad}:2: not a probe row: malformed JSON'), lines[1])
            self.assertEqual(lines[2], f'report: {bad}:5: not a probe row: missing field "ts"')
            self.assertEqual(lines[3], f'report: {bad}: 2 of 5 lines are not probe rows: nothing written '
                                       '(fix or remove them)')
            self.assertFalse(os.path.exists(out))
            self.assertEqual(p.stdout, '')

    def test_missing_and_empty_files_are_refused(self):
        with TempDir() as tmp:
            empty = f'{tmp}/empty.jsonl'
            open(empty, 'w').close()
            p = run_cli(['report', f'{tmp}/missing.jsonl', empty, '--out', f'{tmp}/r.html'])
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr.strip().splitlines(),
                             [f'report: {tmp}/missing.jsonl: cannot read rows file: No such file or directory',
                              f'report: {empty}: no rows to report'])
            p = run_cli(['report'])
            self.assertEqual(p.returncode, 2)
            self.assertIn('ROWS is required', p.stderr)

    def test_without_out_the_html_goes_to_stdout_and_hosts_label_the_files(self):
        with TempDir() as tmp:
            a, b = f'{tmp}/a.jsonl', f'{tmp}/b.jsonl'
            with open(a, 'w') as f:
                f.write(''.join(row(i, host='laptop') for i in range(3)))
            with open(b, 'w') as f:
                f.write(''.join(row(i, host='ci-runner') for i in range(3)))
            p = run_cli(['report', a, b])  # stdout is a pipe here, not a terminal
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.startswith('<!DOCTYPE html>'), p.stdout[:100])
            self.assertIn('svc @ laptop', p.stdout)
            self.assertIn('svc @ ci-runner', p.stdout)
            self.assertIn('-> stdout', p.stderr)
            p2 = run_cli(['report', a, b, '--out', '-'])
            self.assertEqual(p2.stdout, p.stdout)

    def test_help_says_where_the_html_goes_and_how_files_are_labelled(self):
        p = run_cli(['report', '--help'])
        self.assertEqual(p.returncode, 0, p.stderr)
        text = ' '.join(p.stdout.split())
        self.assertIn("each target becomes 'TARGET @ LABEL'", text)
        self.assertIn('refused when stdout is a terminal', text)
        self.assertIn('FILE:LINE', text)


if __name__ == '__main__':
    unittest.main()
