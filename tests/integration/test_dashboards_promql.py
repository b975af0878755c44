"""Every PromQL expression of the dashboards and the rules, evaluated by real
Prometheus servers (one without the rule files, one with them) scraping the real
exporter while it probes the test upstream (tests/deploy/promql_e2e.py does the
evaluation; this test provides the exporter and the upstream). Every panel must
return data, without the recording rules (raw fallbacks) as with them, for the
"All" selection and for a concrete job/instance/target; panels on recording
rules must agree with their fallbacks. The second test does the same with native
histograms on in both servers (the exporter's protobuf exposition, which Prometheus
2.42 keeps as native series only): every panel but the classic-only gap heatmap
answers from the native histograms (docs/queries.md)."""
import os
import subprocess
import sys
import unittest

from harness import ROOT, Exporter, TempDir, Upstream, render_config


class DashboardsAndRules(unittest.TestCase):
    def test_every_expression_against_the_real_exporter(self):
        self.run_e2e([])

    def test_every_expression_on_native_histograms_only(self):
        self.run_e2e(['--native'])

    def run_e2e(self, extra):
        with TempDir() as tmp, Upstream(tmp) as up:
            targets = [
                {'name': 'healthy', 'url': up.url('ttft=60,gap=15,chunks=20'), 'prompts': 'short, long'},
                {'name': 'stally', 'url': up.url('ttft=80,gap=10,chunks=20,stall=8:300'), 'prompts': 'short'},
                {'name': 'failing', 'url': up.url('status=503'), 'prompts': 'short'},
            ]
            cfg = render_config(targets, {'interval': '1s', 'warmup': 1})
            with Exporter(tmp, cfg) as ex:
                run = subprocess.run(
                    [sys.executable, os.path.join(ROOT, 'tests', 'deploy', 'promql_e2e.py'),
                     '--exporter-url', f'{ex.base}/metrics', '--wait', '120', '--core-panels', 'all']
                    + extra,
                    capture_output=True, text=True, timeout=400)
                sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
                self.assertEqual(run.returncode, 0)
                self.assertRegex(run.stdout, r'\d+ passed, 0 failed')
                self.assertRegex(run.stdout, r' [1-9]\d* queries on recording rules')


if __name__ == '__main__':
    unittest.main()
