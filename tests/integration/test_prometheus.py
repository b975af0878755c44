"""A real Prometheus scrapes the exporter: the canonical gap p95 query lands in
the bucket the upstream's script implies, and promtool finds nothing wrong
with the exposition. With the shipped alerting rules (windows shortened for
the test), the demo's stalling targets raise the page and the healthy ones
raise nothing."""
import os
import re
import time
import unittest

from harness import (ROOT, Exporter, Prometheus, TempDir, Upstream, promtool_findings,
                     render_config, wait_for)

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
                code, findings = promtool_findings(text)
                self.assertEqual(code, 0, findings)
                self.assertEqual(findings, [])

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


def demo_config(upstream_base):
    """config/demo.yaml against `upstream_base`, probing every second."""
    with open(os.path.join(ROOT, 'config', 'demo.yaml')) as f:
        text = f.read()
    text = text.replace('UPSTREAM_URL', upstream_base)
    text = text.replace('file: prompts/', f'file: {ROOT}/config/prompts/')
    text = text.replace('listen: "127.0.0.1:9687"', 'listen: "127.0.0.1:0"')
    return text.replace('  interval: 5s\n', '  interval: 1s\n')


def short_window_rules(dest):
    """config/prometheus/alerting_rules.yml with 20 s windows (the test's
    probes come every ~2 s, so 20 s hold ~10 probes of each target)."""
    with open(os.path.join(ROOT, 'config', 'prometheus', 'alerting_rules.yml')) as f:
        text = f.read()
    text = re.sub(r'\[(10|15)m\]', '[20s]', text)
    with open(dest, 'w') as f:
        f.write(text)
    return dest


class DemoAlerts(unittest.TestCase):
    STALLING = ('stalling-proxy', 'pausing-model')  # two stalls (450, 700 ms) in every probe
    QUIET = ('healthy', 'anthropic', 'ollama')

    def test_stalling_demo_targets_raise_the_page_healthy_nothing(self):
        start = time.monotonic()
        with TempDir() as tmp, Upstream(tmp) as up:
            base = up.url().rsplit('/v1', 1)[0]
            rules = short_window_rules(os.path.join(tmp, 'alerts.yml'))
            with Exporter(tmp, demo_config(base)) as ex, \
                    Prometheus(tmp, [f'127.0.0.1:{ex.port}'], rule_files=[rules]) as prom:
                # the thresholds the rules read, one series per target
                ttft = {r['metric']['target']: float(r['value'][1])
                        for r in wait_for(lambda: prom.query('llm_stream_alert_ttft_seconds'), 20,
                                          interval=1, what='threshold gauges scraped')}
                self.assertEqual(ttft.get('healthy'), 5.0)

                def paged():
                    res = prom.query('ALERTS{alertname="LLMStreamStalling"}')
                    got = sorted(r['metric']['target'] for r in res)
                    return got if set(self.STALLING) <= set(got) else False
                quiet = '|'.join(self.QUIET)
                seen = set()  # alerts of the quiet targets, polled from the start

                def paged_noting_quiet():
                    for r in prom.query('ALERTS{target=~"%s"}' % quiet):
                        seen.add((r['metric']['alertname'], r['metric']['target']))
                    return paged()
                got = wait_for(paged_noting_quiet, 40, interval=1,
                               what='LLMStreamStalling for the stalling targets')
                # one alert per target (the page aggregates the prompts)
                self.assertEqual(got, sorted(self.STALLING), got)
                # Until a prompt's first success, LLMStreamProbesMissing is
                # pending for it (counters start at 0), and until its first
                # measured probe LLMStreamProbesStale (its timestamp starts at
                # 0; warmups do not move it): start-up states the rules' `for`
                # covers. Once every quiet series succeeded, nothing.
                wait_for(lambda: not prom.query(
                    'llm_stream_probes_total{result="success",target=~"%s"} == 0' % quiet),
                         20, interval=1, what='a success of every quiet target and prompt')
                time.sleep(3)  # two more rule evaluations
                noisy = prom.query('ALERTS{target=~"%s"}' % quiet)
                self.assertEqual(noisy, [], [r['metric'] for r in noisy])
                start_up = ('LLMStreamProbesMissing', 'LLMStreamProbesStale')
                self.assertEqual({a for a in seen if a[0] not in start_up}, set(), seen)
                gap_p95 = prom.query('ALERTS{alertname=~"LLMStreamGapP95.*"}')
                self.assertEqual(gap_p95, [], 'the pooled gap p95 does not see these stalls')
        self.assertLess(time.monotonic() - start, 60)


if __name__ == '__main__':
    unittest.main()
