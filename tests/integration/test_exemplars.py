"""OpenMetrics and exemplars end to end: a real Prometheus 2.42 with exemplar
storage scrapes the exporter (Prometheus asks for OpenMetrics in its Accept
header), and its exemplar API leads from a TTFT bucket to the exact probe: a
probe_id that is the `id` of a row in /api/v1/probes. promtool 2.42 reads only
the text format (an exemplar is a parse error to it), so it checks the text
body, and Prometheus' own OpenMetrics parser checks the OpenMetrics one."""
import json
import os
import re
import time
import unittest
import urllib.parse
import urllib.request

from harness import (ROOT, Exporter, Prometheus, TempDir, Upstream, http_get, promtool_findings,
                     render_config, wait_for)

# What Prometheus 2.42 sends when it scrapes.
PROMETHEUS_ACCEPT = ('application/openmetrics-text;version=1.0.0,application/openmetrics-text;'
                     'version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')
TTFT_BUCKET = 'llm_stream_time_to_first_token_seconds_bucket'
EXEMPLAR = re.compile(r'^(\w+)\{([^}]*)\} \S+ # \{probe_id="([0-9a-f]{16})"\} (\S+) (\S+)$')


class ExemplarPrometheus(Prometheus):
    """The harness' Prometheus with --enable-feature=exemplar-storage."""

    def __init__(self, workdir, scrape_targets):
        super().__init__(workdir, scrape_targets, args=['--enable-feature=exemplar-storage'])

    def exemplars(self, query, window_s=600):
        now = time.time()
        qs = urllib.parse.urlencode({'query': query, 'start': now - window_s, 'end': now + 60})
        status, body = http_get(self.base + '/api/v1/query_exemplars?' + qs)
        data = json.loads(body)
        if status != 200 or data.get('status') != 'success':
            raise AssertionError(f'exemplar query failed: {query}: {body}')
        return data['data']


def dashboard_target(name, title):
    """Query A of the panel `title` of grafana/<name>."""
    with open(os.path.join(ROOT, 'grafana', name)) as f:
        dash = json.load(f)
    panel = next(p for p in dash['panels'] if p.get('title') == title)
    return panel['targets'][0]


TARGETS = [{'name': 'steady', 'url': 'ttft=60,gap=20,chunks=8', 'extra': ['interval: 1s']},
           {'name': 'stally', 'url': 'ttft=40,gap=10,chunks=8,stall=4:300', 'extra': ['interval: 1s']}]


def exporter(tmp, up):
    targets = [dict(t, url=up.url(t['url'])) for t in TARGETS]
    return Exporter(tmp, render_config(targets))


def wait_first_probes(ex):
    for t in TARGETS:
        ex.wait_probes(t['name'], 2, timeout=30)


class Exemplars(unittest.TestCase):
    def test_openmetrics_body_and_promtool(self):
        with TempDir() as tmp, Upstream(tmp) as up, exporter(tmp, up) as ex:
            wait_first_probes(ex)
            rows = {r['id']: r for r in ex.rows()}
            self.assertTrue(rows)
            for probe_id in rows:
                self.assertRegex(probe_id, r'^[0-9a-f]{16}$')

            req = urllib.request.Request(ex.base + '/metrics', headers={'Accept': PROMETHEUS_ACCEPT})
            with urllib.request.urlopen(req, timeout=5) as r:
                content_type = r.headers['Content-Type']
                body = r.read().decode()
            self.assertEqual(content_type, 'application/openmetrics-text; version=1.0.0; charset=utf-8')
            self.assertTrue(body.endswith('# EOF\n'), body[-200:])
            self.assertIn('# TYPE llm_stream_probes counter\n', body)
            self.assertIn('# UNIT llm_stream_time_to_first_token_seconds seconds\n', body)
            self.assertRegex(body, r'\nllm_stream_probes_created\{[^}]*\} 1\d{9}\.\d{3}\n')
            self.assertIn('\nprocess_resident_memory_bytes ', body)
            # Every exemplar names a probe; TTFT ones name a kept row with that TTFT.
            seen = {}
            for line in body.splitlines():
                m = EXEMPLAR.match(line)
                if m:
                    seen.setdefault(m.group(1), []).append((m.group(3), float(m.group(4))))
            self.assertEqual(set(seen), {TTFT_BUCKET, 'llm_stream_inter_chunk_gap_seconds_bucket',
                                         'llm_stream_probe_max_gap_seconds_bucket'})
            matched = [(i, v) for i, v in seen[TTFT_BUCKET] if i in rows]
            self.assertTrue(matched, (seen[TTFT_BUCKET], list(rows)))
            for probe_id, value in matched:
                self.assertAlmostEqual(rows[probe_id]['ttft_ms'] / 1000, value, delta=0.0005)

            # promtool 2.42 checks the text format, which carries no exemplars.
            status, text = http_get(ex.base + '/metrics', headers={'Accept': 'text/plain'})
            self.assertEqual(status, 200)
            self.assertNotIn(' # {', text)
            code, findings = promtool_findings(text)
            self.assertEqual(code, 0, findings)
            self.assertEqual(findings, [])

    def test_prometheus_exemplar_api_leads_to_a_row(self):
        with TempDir() as tmp, Upstream(tmp) as up, exporter(tmp, up) as ex:
            wait_first_probes(ex)
            with ExemplarPrometheus(tmp, [f'127.0.0.1:{ex.port}']) as prom:
                def found():
                    ids = {r['id'] for r in ex.rows()}
                    hits = [(s['seriesLabels'], e) for s in prom.exemplars(TTFT_BUCKET)
                            for e in s['exemplars'] if e['labels'].get('probe_id') in ids]
                    return hits
                hits = wait_for(found, 60, interval=1, what='a TTFT exemplar naming a kept row')
                labels, exemplar = hits[0]
                self.assertEqual(labels['__name__'], TTFT_BUCKET)
                self.assertIn(labels['target'], ('steady', 'stally'))
                row = next(r for r in ex.rows() if r['id'] == exemplar['labels']['probe_id'])
                self.assertEqual(row['target'], labels['target'])
                self.assertAlmostEqual(row['ttft_ms'] / 1000, float(exemplar['value']), delta=0.0005)
                # The exemplar's time is the end of that probe.
                self.assertAlmostEqual(float(exemplar['timestamp']),
                                       row['ts'] + row['duration_ms'] / 1000, delta=0.01)

                # Prometheus took the OpenMetrics body: `_created` exists only there.
                self.assertEqual(prom.query('up{job="llm-stream-exporter"}')[0]['value'][1], '1')
                created = prom.query('llm_stream_probes_created')
                self.assertTrue(created, 'no _created series: the scrape was not OpenMetrics')
                gap = prom.exemplars('llm_stream_probe_max_gap_seconds_bucket{target="stally"}')
                values = [float(e['value']) for s in gap for e in s['exemplars']]
                self.assertTrue(values and all(v >= 0.29 for v in values), values)

                # The overview's worst-gap panel asks for exemplars with its own
                # query; each names a probe whose page the data source's exemplar
                # link (docs/runbook.md: <exporter>/probe?id=${__value.raw}) opens.
                panel = dashboard_target('llm-stream-overview.json', 'Typical worst gap, against its bar')
                self.assertTrue(panel.get('exemplar'), panel)
                expr = re.sub(r'\b(\w+)=~"\$\w+"', r'\1=~".*"', panel['expr'])
                ids = {e['labels']['probe_id'] for s in prom.exemplars(expr) for e in s['exemplars']
                       if s['seriesLabels'].get('target') == 'stally'}
                self.assertTrue(ids, expr)
                probe_id = sorted(ids)[0]
                status, body = http_get(f'{ex.base}/probe?id={probe_id}')
                self.assertEqual(status, 200, body[:300])
                self.assertIn(probe_id, body if isinstance(body, str) else body.decode())

    def test_probes_by_id_returns_that_row(self):
        # /api/v1/probes?id= is served by RowStore::find (wired in server/routes.cpp).
        with TempDir() as tmp, Upstream(tmp) as up, exporter(tmp, up) as ex:
            wait_first_probes(ex)
            row = ex.rows()[-1]
            status, body = http_get(f'{ex.base}/api/v1/probes?id={row["id"]}')
            self.assertEqual(status, 200, body)
            probes = json.loads(body)['probes']
            self.assertEqual([p['id'] for p in probes], [row['id']])
            status, body = http_get(f'{ex.base}/api/v1/probes?id=0000000000000000')
            self.assertEqual(json.loads(body)['probes'] if status == 200 else [], [])


if __name__ == '__main__':
    unittest.main()
