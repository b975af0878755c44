"""The HTML report of a real run renders in headless Chromium (Debian's
`chromium`): its inline self-check passes (data-selfcheck="ok" on <html>), the
DOM has one timeline row per measured run, the console shows no errors, the
screenshot is a real picture, and the file loads nothing from anywhere.
"""
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


if __name__ == '__main__':
    unittest.main()
