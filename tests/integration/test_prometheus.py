"""A real Prometheus scrapes the exporter: the canonical gap p95 query lands in
the bucket the upstream's script implies, and promtool finds nothing wrong
with the exposition."""
import shutil
import subprocess
import unittest

from harness import Exporter, Prometheus, TempDir, Upstream, render_config, wait_for

CANONICAL = ('histogram_quantile(0.95, sum by (target, le) '
             '(rate(llm_stream_inter_chunk_gap_seconds_bucket[{w}])))')


class RealPrometheus(unittest.TestCase):
    def test_gap_p95_and_promtool(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            targets = [
                # every gap 40 ms: p95 falls in the (0.03, 0.05] bucket
                {'name': 'steady', 'url': up.url('ttft=50,gap=40,chunks=20'), 'extra': ['interval: 1s']},
                # 1 gap in 10 is 600 ms: p95 falls in the (0.5, 0.75] bucket
                {'name': 'stally', 'url': up.url('ttft=50,gap=10,chunks=11,stall=5:600'),
                 'extra': ['interval: 1s']},
            ]
            with Exporter(tmp, render_config(targets)) as ex:
                text = ex.metrics_text()
                promtool = shutil.which('promtool') or '/usr/bin/promtool'
                check = subprocess.run([promtool, 'check', 'metrics'], input=text.encode(),
                                       capture_output=True)
                self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
                self.assertEqual((check.stdout + check.stderr).strip(), b'')

                with Prometheus(tmp, [f'127.0.0.1:{ex.port}']) as prom:
                    expr = CANONICAL.format(w='20s')

                    def ready():
                        res = {r['metric']['target']: float(r['value'][1]) for r in prom.query(expr)}
                        ok = all(t in res and res[t] == res[t] for t in ('steady', 'stally'))
                        return ok and res
                    res = wait_for(ready, 60, interval=1, what='gap p95 from prometheus')
                    self.assertGreater(res['steady'], 0.03)
                    self.assertLessEqual(res['steady'], 0.05)
                    self.assertGreater(res['stally'], 0.5)
                    self.assertLessEqual(res['stally'], 0.75)
                    up_ = prom.query('up{job="llm-stream-exporter"}')
                    self.assertEqual(up_[0]['value'][1], '1')
                    stalls = prom.query('sum(llm_stream_stalls_total{target="stally"}) '
                                        '- sum(llm_stream_stalled_probes_total{target="stally"})')
                    self.assertEqual(float(stalls[0]['value'][1]), 0.0)  # exactly one stall per probe


if __name__ == '__main__':
    unittest.main()
