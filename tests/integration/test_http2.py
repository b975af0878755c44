"""HTTP/2 probes (issue 32), end to end, against real HTTP/2 peers.

RealProxies: a real nghttpx (h2 front end, HTTP/1.1 back end) and a real
nginx (`listen ... ssl http2`, proxy_buffering off), both with TLS from the
test PKI, in front of the scripted upstream. The measured probe of an
`http_version: "2"` target counts the planted stall exactly once, its TTFT is
within 5 ms of the upstream's real first write plus the proxy's hop (what an
HTTP/1.1 target through the same proxy measures: 2-5 ms here, the same for
both protocols), every gap is paired with the
upstream's real writes within the HTTP/1.1 clock test's tolerance, the row and
llm_stream_target_info say "2", the upstream received a Content-Length body
(not chunked), and the measured probe reused the warmup's connection (no
connect/tls phase). `auto` picks h2 where offered and 1.1 where not; `"2"`
against a server that does not offer h2 fails at once with reason protocol.

ScriptedH2Server: the scripted HTTP/2 server (h2_server.py, python3-h2) with
its fault modes: DATA split across reads and several events per frame,
DATA in 16-byte frames, RST_STREAM and GOAWAY mid-stream (reason "reset",
h2_error "INTERNAL_ERROR", the events before counted), a window that never
opens (a timeout at the deadline, the body held back, no hang), and h2c with
prior knowledge on http://.

RunAndCompare: `run` over h2 writes rows with http_version "2" and h2_error,
and `compare --pair h1=h2` names the HTTP version each side spoke.

ThroughForwardProxy: h2 inside a real squid's CONNECT tunnel; h2c through an
HTTP proxy is a protocol failure.

ScriptedServerSelfCheck: the scripted server's faults as a real h2 client
(nghttp -v) sees them on the wire.

Each target's first probe is a warmup (opens the connection; never in rows),
the measured probe follows 3 s later on the warm connection.
"""
import json
import os
import re
import shutil
import subprocess
import unittest

from h2_peers import NGHTTPX, H2Server, Nghttpx, have_python_h2
from harness import Exporter, Nginx, TempDir, Upstream, render_config, wait_for
from run_helpers import read_rows, run_cli, run_config
from test_proxy import SQUID, Squid

NGHTTP = shutil.which('nghttp')

TOL_MS = 5.0            # TTFT and the planted stall, as test_clock.py
GAP_P90_MS = 2.0        # paired gap errors, as test_clock.py's paired test
GAP_MAX_MS = 15.0
# Through a proxy one chunk relayed late (a few ms on a busy 2-core machine) shifts
# two gaps, one longer, the next shorter: allowed once per stream, to both protocols.
HOP_LATE_GAPS = 2
SPEC = 'ttft=150,gap=20,chunks=12,stall=10:400'
GZIP = ['proxy_buffering off', 'gzip on', 'gzip_types text/event-stream', 'gzip_min_length 0']


def tls_line(ca):
    return f'tls: {{ca_file: "{ca}"}}'


def paired_errors(gaps_ms, sends):
    true_gaps = [(b - a) * 1000 for a, b in zip(sends, sends[1:])]
    assert len(true_gaps) == len(gaps_ms), (true_gaps, gaps_ms)
    return sorted(abs(m - t) for m, t in zip(gaps_ms, true_gaps))


class ClockChecks:
    """Assertions shared by both classes: a measured row against the real
    send times of the server that wrote its chunks."""

    def assert_gaps_paired(self, name, row, sends, hop=False):
        errors = paired_errors(row['gaps_ms'], sends)
        if hop:
            self.assertLessEqual(sum(e >= GAP_P90_MS for e in errors), HOP_LATE_GAPS, (name, errors))
        else:
            self.assertLess(errors[int(0.9 * len(errors))], GAP_P90_MS, (name, errors))
        self.assertLess(errors[-1], GAP_MAX_MS, (name, errors))

    def assert_timed_like_http1(self, name, row, t_request, sends, planted_ttft, stall_index, stall_ms,
                                hop_ms=None):
        self.assertTrue(row['ok'], (name, row))
        self.assertEqual(row['http_version'], '2', name)
        self.assertIsNone(row.get('h2_error'), name)
        self.assertEqual(row['stalls'], 1, name)
        # TTFT: never early against the script; within 5 ms of the server's real first
        # write, plus what a proxy's hop adds (measured by HTTP/1.1 through the same hop).
        self.assertGreaterEqual(row['ttft_ms'], planted_ttft - TOL_MS, name)
        real_ttft = (sends[0] - t_request) * 1000
        self.assertLess(abs(row['ttft_ms'] - real_ttft - (hop_ms or 0.0)), TOL_MS,
                        (name, row['ttft_ms'], real_ttft, hop_ms))
        self.assertGreaterEqual(row['gaps_ms'][stall_index - 1], stall_ms - TOL_MS, name)
        self.assert_gaps_paired(name, row, sends, hop=hop_ms is not None)
        # The warm connection: the measured probe opened nothing.
        self.assertNotIn('connect', row['phases_ms'], name)
        self.assertNotIn('tls', row['phases_ms'], name)


@unittest.skipUnless(have_python_h2() and NGHTTP, 'needs python3-h2 and nghttp (nghttp2-client)')
class ScriptedServerSelfCheck(unittest.TestCase):
    """The scripted server's faults are real on the wire, as a real h2 client
    (nghttp -v) sees them: otherwise the exporter's tests below would pass
    against faults that never happened."""

    def frames(self, url, body, timeout=10):
        p = subprocess.run([NGHTTP, '-v', '-n', '-d', body, url + '/chat/completions'], capture_output=True, text=True,
                           timeout=timeout)
        return p.stdout

    def test_faults_on_the_wire(self):
        with TempDir() as tmp, H2Server(tmp, tls=False) as h2c:
            body = os.path.join(tmp, 'body.json')
            with open(body, 'w') as f:
                f.write('{"model":"m","stream":true}')
            # split: 3 content writes + the closing write, each in three DATA frames
            out = self.frames(h2c.url('split', 'ttft=10,gap=5,chunks=3'), body)
            self.assertEqual(len(re.findall(r'recv DATA frame', out)), 12, out)
            # tinyframe:16: every DATA frame carries at most 16 bytes
            out = self.frames(h2c.url('tinyframe:16', 'ttft=10,gap=5,chunks=3'), body)
            sizes = [int(x) for x in re.findall(r'recv DATA frame <length=(\d+)', out)]
            self.assertGreater(len(sizes), 40, out)
            self.assertLessEqual(max(sizes), 16, sizes)
            # rst:1: one content write, then RST_STREAM INTERNAL_ERROR
            out = self.frames(h2c.url('rst:1', 'ttft=10,gap=5,chunks=3'), body)
            self.assertEqual(len(re.findall(r'recv DATA frame', out)), 1, out)
            self.assertRegex(out, r'recv RST_STREAM frame <[^>]*stream_id=(\d+)>\s+\(error_code=INTERNAL_ERROR')
            # goaway:1: GOAWAY INTERNAL_ERROR naming a last stream below ours
            out = self.frames(h2c.url('goaway:1', 'ttft=10,gap=5,chunks=3'), body)
            ours = int(re.search(r'recv DATA frame <[^>]*stream_id=(\d+)>', out).group(1))
            last = re.search(r'recv GOAWAY frame[^\n]*\n\s+\(last_stream_id=(\d+), error_code=INTERNAL_ERROR', out)
            self.assertIsNotNone(last, out)
            self.assertLess(int(last.group(1)), ours)
            # window0: of a 100 KiB body, only the initial 65,535-byte connection window goes out
            with open(body, 'w') as f:
                f.write('{"model":"m","stream":true,"x":"' + 'a' * 100000 + '"}')
            with self.assertRaises(subprocess.TimeoutExpired):
                self.frames(h2c.url('window0', 'ttft=10,chunks=3'), body, timeout=1.5)
            held = wait_for(lambda: h2c.streams('window0'), 5, what='window0 record')
            self.assertEqual(held[0]['body_bytes'], 65535, held)
            self.assertEqual(held[0]['content_length'], str(100000 + 34), held)


@unittest.skipUnless(NGHTTPX, 'nghttpx is not installed (apt-get install nghttp2-proxy)')
class RealProxies(unittest.TestCase, ClockChecks):
    def test_h2_through_nghttpx_and_nginx(self):
        with TempDir() as tmp, Upstream(tmp) as up, Upstream(tmp, tls=True, name='tls-upstream') as h1:
            pki = h1.pki
            with Nghttpx(tmp, up.port, pki) as ngx_h2, \
                    Nginx(tmp, up.base, {'p': ['proxy_buffering off'], 'gz': GZIP}, tls=pki, http2=True,
                          realtime=True) as ngx:
                self.run_targets(tmp, up, h1, ngx_h2, ngx)

    def run_targets(self, tmp, up, h1, nghttpx, nginx):
        ca = tls_line(h1.pki['ca'])
        targets = [
            {'name': 'nghttpx-h2', 'url': nghttpx.url(SPEC + ',seed=1'), 'extra': [ca, 'http_version: "2"']},
            {'name': 'nginx-h2', 'url': nginx.url('p', SPEC + ',seed=2'), 'extra': [ca, 'http_version: "2"']},
            {'name': 'nghttpx-11', 'url': nghttpx.url(SPEC + ',seed=3'), 'extra': [ca, 'http_version: "1.1"']},
            {'name': 'nginx-11', 'url': nginx.url('p', SPEC + ',seed=4'), 'extra': [ca, 'http_version: "1.1"']},
            {'name': 'nginx-auto', 'url': nginx.url('p', 'ttft=50,gap=10,chunks=5'),
             'extra': [ca, 'http_version: "auto"']},
            {'name': 'nginx-browser', 'url': nginx.url('p', 'ttft=50,gap=10,chunks=5'),
             'extra': [ca, 'client: browser']},
            {'name': 'nginx-no-h2-auto', 'url': nginx.url('p', 'ttft=50,gap=10,chunks=5', nginx.plain_tls_base),
             'extra': [ca, 'http_version: "auto"']},
            {'name': 'h1-only-2', 'url': h1.url('ttft=50,gap=10,chunks=5'), 'extra': [ca, 'http_version: "2"']},
            {'name': 'nginx-gzip', 'url': nginx.url('gz', 'ttft=100,gap=40,chunks=10'),
             'extra': [ca, 'http_version: "2"', 'accept_encoding: [gzip]']},
        ]
        with Exporter(tmp, render_config(targets, {'interval': '3s', 'warmup': 1})) as ex:
            for t in targets:
                ex.wait_probes(t['name'], 1, timeout=20)
            rows = {t['name']: ex.rows(t['name'])[-1] for t in targets}
            samples = ex.samples()
        info = {(l['target'], l.get('http_version')) for n, l, v in samples
                if n == 'llm_stream_target_info' and v == 1}
        protocol_failures = sum(v for n, l, v in samples if n == 'llm_stream_probe_failures_total'
                                and l.get('target') == 'h1-only-2' and l.get('reason') == 'protocol')
        records = up.requests()

        def measured(seed):
            mine = sorted((r for r in records if f'seed={seed}/' in r['path']), key=lambda r: r['t_request'])
            self.assertGreaterEqual(len(mine), 2, (seed, mine))  # warmup, measured
            return mine[1]
        # What each proxy's hop adds to TTFT, as HTTP/1.1 through it measures it.
        hop = {}
        for proxy, seed in (('nghttpx', 3), ('nginx', 4)):
            row, rec = rows[f'{proxy}-11'], measured(seed)
            self.assertTrue(row['ok'], row)
            self.assertEqual(row['http_version'], '1.1')
            self.assertEqual(row['stalls'], 1)
            self.assertIn((f'{proxy}-11', '1.1'), info)
            hop[proxy] = row['ttft_ms'] - (rec['sends'][0] - rec['t_request']) * 1000
            self.assertLess(hop[proxy], 15, hop)
            self.assert_gaps_paired(f'{proxy}-11', row, rec['sends'], hop=True)
        for name, seed in (('nghttpx-h2', 1), ('nginx-h2', 2)):
            rec, row = measured(seed), rows[name]
            self.assert_timed_like_http1(name, row, rec['t_request'], rec['sends'], 150, 10, 400,
                                         hop[name.split('-')[0]])
            measured_rec = rec
            self.assertEqual(row['chunks'], 12, name)
            self.assertIn((name, '2'), info)
            # The proxy forwarded a Content-Length body, not a chunked one.
            self.assertIsNotNone(measured_rec['content_length'], (name, measured_rec))
            self.assertIsNone(measured_rec['transfer_encoding'], (name, measured_rec))
        for name, version in (('nginx-auto', '2'), ('nginx-browser', '2'), ('nginx-no-h2-auto', '1.1')):
            self.assertTrue(rows[name]['ok'], (name, rows[name]))
            self.assertEqual(rows[name]['http_version'], version, name)
            self.assertEqual(rows[name]['chunks'], 5, name)
            self.assertIn((name, version), info)
        # gzip over h2, flushed per upstream write: decoded chunk by chunk as on HTTP/1.1.
        gz = rows['nginx-gzip']
        self.assertTrue(gz['ok'], gz)
        self.assertEqual(gz['http_version'], '2')
        self.assertEqual(gz['content_encoding'], 'gzip')
        self.assertEqual(gz['chunks'], 10)
        self.assertEqual(gz['coalesced_chunks'], 0, gz)
        self.assertAlmostEqual(sorted(gz['gaps_ms'])[4], 40, delta=5, msg=gz['gaps_ms'])
        # "2" where the server does not offer h2: a clear protocol failure, at once.
        bad = rows['h1-only-2']
        self.assertFalse(bad['ok'])
        self.assertEqual(bad['reason'], 'protocol', bad)
        self.assertLess(bad['duration_ms'], 1000, bad)
        self.assertGreaterEqual(protocol_failures, 1)


def big_prompt_config(tmp, targets, defaults):
    """render_config plus a prompt `big` of 100 KiB: more than the 65,535-byte
    connection window a server opens by default."""
    path = os.path.join(tmp, 'big.txt')
    with open(path, 'w') as f:
        f.write('Summarise the following text. ' + 'lorem ipsum dolor sit amet ' * 3800 + '\n')
    text = render_config(targets, defaults)
    return text.replace('prompts:\n', f'prompts:\n  big: {{file: "{path}"}}\n', 1)


@unittest.skipUnless(have_python_h2(), 'python3-h2 is not installed (apt-get install python3-h2)')
class ScriptedH2Server(unittest.TestCase, ClockChecks):
    def test_fault_modes(self):
        with TempDir() as tmp, H2Server(tmp, tls=True) as srv, H2Server(tmp, tls=False) as h2c:
            ca = tls_line(srv.pki['ca'])
            two = [ca, 'http_version: "2"']
            targets = [
                {'name': 'split', 'url': srv.url('split', 'ttft=100,gap=20,chunks=12,stall=8:400'), 'extra': two},
                {'name': 'batched', 'url': srv.url('split', 'ttft=60,gap=20,chunks=12,per_write=3'), 'extra': two},
                {'name': 'tinyframe', 'url': srv.url('tinyframe:16', 'ttft=80,gap=20,chunks=12,stall=6:300'),
                 'extra': two},
                {'name': 'rst', 'url': srv.url('rst:5', 'ttft=50,gap=20,chunks=12'), 'extra': two},
                {'name': 'goaway', 'url': srv.url('goaway:5', 'ttft=50,gap=20,chunks=12'), 'extra': two},
                {'name': 'window0', 'url': srv.url('window0', 'ttft=50,gap=20,chunks=12'), 'prompts': 'big',
                 'extra': two + ['timeout: {first_token: 2s, idle: 2s, total: 3s}']},
                {'name': 'auto', 'url': srv.url('plain', 'ttft=50,gap=20,chunks=6'),
                 'extra': [ca, 'http_version: "auto"']},
                {'name': 'h2c', 'url': h2c.url('plain', 'ttft=50,gap=20,chunks=8'), 'extra': ['http_version: "2"']},
                # ~100 KB of answer through the smallest windows: it only arrives if the
                # exporter opens them again (WINDOW_UPDATE) as it consumes the data.
                {'name': 'small-window', 'url': srv.url('plain', 'ttft=50,gap=1,chunks=400'),
                 'extra': two + ['http2: {stream_window: 65535, connection_window: 65535}']},
            ]
            config = big_prompt_config(tmp, targets, {'interval': '3s', 'warmup': 1})
            with Exporter(tmp, config) as ex:
                for t in targets:
                    ex.wait_probes(t['name'], 1, timeout=25)
                rows = {t['name']: ex.rows(t['name'])[-1] for t in targets}
                failures = {(l['target'], l['reason']): v for n, l, v in ex.samples()
                            if n == 'llm_stream_probe_failures_total' and v > 0}
            streams = srv.streams() + h2c.streams()
            self.check_timing(rows, srv)
            self.check_cuts(rows, failures)
            self.check_window(rows, srv)
            self.check_windows(srv)
            self.check_wire(rows, streams)

    def measured_stream(self, srv, mode, spec_part):
        mine = sorted((s for s in srv.streams(mode) if spec_part in s['path'] and s['outcome'] == 'complete'),
                      key=lambda s: s['t_request'])
        self.assertGreaterEqual(len(mine), 2, (mode, mine))  # warmup, measured
        return mine[1]

    def check_timing(self, rows, srv):
        s = self.measured_stream(srv, 'split', 'ttft=100')
        self.assert_timed_like_http1('split', rows['split'], s['t_request'], s['sends'], 100, 8, 400)
        t = self.measured_stream(srv, 'tinyframe:16', 'ttft=80')
        self.assert_timed_like_http1('tinyframe', rows['tinyframe'], t['t_request'], t['sends'], 80, 6, 300)
        for name, chunks in (('split', 12), ('batched', 12), ('tinyframe', 12), ('auto', 6), ('h2c', 8),
                             ('small-window', 400)):
            row = rows[name]
            self.assertTrue(row['ok'], (name, row))
            self.assertEqual(row['http_version'], '2', name)
            # Every byte intact: every event decoded, the finish event and the usage read.
            self.assertEqual(row['chunks'], chunks, name)
            self.assertEqual(row['finish_reason'], 'stop', name)
            self.assertEqual(row['usage']['completion_tokens'], chunks, name)
        # Three events per write, the write cut in three frames: the events that
        # came whole in an earlier frame arrive 1-2 ms before the write's last one.
        batched = rows['batched']['gaps_ms']
        self.assertEqual(sum(1 for g in batched if g > 15), 3, batched)  # one per write after the first
        self.assertEqual(rows['batched']['stalls'], 0)

    def check_cuts(self, rows, failures):
        for name in ('rst', 'goaway'):
            row = rows[name]
            self.assertFalse(row['ok'], (name, row))
            self.assertEqual(row['reason'], 'reset', (name, row))
            self.assertEqual(row['h2_error'], 'INTERNAL_ERROR', (name, row))
            self.assertEqual(row['chunks'], 5, (name, row))  # the events before the cut
            self.assertGreaterEqual(failures.get((name, 'reset'), 0), 1, failures)

    def check_window(self, rows, srv):
        row = rows['window0']
        self.assertFalse(row['ok'], row)
        self.assertTrue(row['reason'].startswith('timeout_'), row)
        self.assertGreater(row['duration_ms'], 1900, row)  # at the deadline ...
        self.assertLess(row['duration_ms'], 3500, row)     # ... and not after it
        self.assertIn('flow control', row['error'], row)
        self.assertIsNone(row.get('h2_error'), row)
        # The server took exactly its initial connection window of the body, no more.
        held = wait_for(lambda: srv.streams('window0'), 5, what='window0 stream records')
        self.assertEqual(held[0]['body_bytes'], 65535, held)
        for s in held:
            self.assertLessEqual(s['body_bytes'], 65535, s)
            self.assertGreater(int(s['content_length']), 65535, s)

    def check_windows(self, srv):
        # A browser's windows by default (Chromium: 6 MiB per stream, 15 MiB connection) ...
        s = self.measured_stream(srv, 'split', 'ttft=100')
        self.assertEqual(s['client_stream_window'], 6 * 1024 * 1024, s)
        self.assertEqual(s['client_connection_window'], 15 * 1024 * 1024, s)
        # ... and the configured ones, opened again as the data is consumed.
        small = [x for x in srv.streams('plain') if 'chunks=400' in x['path'] and x['outcome'] == 'complete']
        self.assertTrue(small, srv.streams('plain'))
        for x in small:
            self.assertEqual(x['client_stream_window'], 65535, x)
            self.assertGreaterEqual(x['window_updates'], 1, x)
            self.assertGreater(x['client_connection_window'], 65535, x)

    def check_wire(self, rows, streams):
        # Every request carried content-length, equal to the body received.
        complete = [s for s in streams if s['outcome'] not in ('connection closed',)
                    and not s['outcome'].startswith('reset by client') and s['mode'] != 'window0']
        self.assertTrue(complete)
        for s in complete:
            self.assertEqual(s['content_length'], str(s['body_bytes']), s)
        # One connection per target, one stream per probe: the split target's
        # warmup and measured probe were streams 1 and 2 of the same connection.
        split = sorted((s for s in streams if s['path'].startswith('/h2/split/s/ttft=100')),
                       key=lambda s: s['t_request'])
        self.assertEqual(len({s['conn'] for s in split}), 1, split)
        self.assertEqual([s['stream_index'] for s in split[:2]], [1, 2], split)


class RunAndCompare(unittest.TestCase):
    """`run` over HTTP/2 writes rows with http_version and h2_error, and
    `compare` says which HTTP each side spoke."""

    def test_compare_names_each_sides_http_version(self):
        with TempDir() as tmp, Upstream(tmp) as up, Upstream(tmp, tls=True, name='pki-source') as pki_up, \
                Nginx(tmp, up.base, {'p': ['proxy_buffering off']}, tls=pki_up.pki, http2=True) as ngx:
            ca = tls_line(pki_up.pki['ca'])
            url = ngx.url('p', 'ttft=50,gap=10,chunks=5')
            cfg = run_config(tmp, [{'name': 'h1', 'url': url, 'extra': [ca, 'http_version: "1.1"']},
                                   {'name': 'h2', 'url': url, 'extra': [ca, 'http_version: "2"']}])
            out = os.path.join(tmp, 'rows.jsonl')
            p = run_cli(['run', '--config', cfg, '--runs', '4', '--warmup', '1', '--out', out], timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = read_rows(out)
            by_target = {}
            for r in rows:
                by_target.setdefault(r['target'], []).append(r)
            self.assertEqual(sorted(by_target), ['h1', 'h2'])
            for name, version in (('h1', '1.1'), ('h2', '2')):
                self.assertEqual(len(by_target[name]), 4, by_target[name])
                for r in by_target[name]:
                    self.assertTrue(r['ok'], r)
                    self.assertEqual(r['http_version'], version, r)
                    self.assertIn('h2_error', r)
                    self.assertIsNone(r['h2_error'], r)
                    self.assertEqual(r['chunks'], 5)
            c = run_cli(['compare', out, '--pair', 'h1=h2', '--format', 'json'])
            self.assertEqual(c.returncode, 0, c.stderr)
            [series] = json.loads(c.stdout)['series']
            self.assertEqual((series['http_version_a'], series['http_version_b']), ('1.1', '2'), series)
            text = run_cli(['compare', out, '--pair', 'h1=h2'])
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertRegex(text.stdout, r'http_version\s+A: 1\.1\S*\s+B: 2\b')


@unittest.skipUnless(have_python_h2() and SQUID, 'needs python3-h2 and squid')
class ThroughForwardProxy(unittest.TestCase):
    """h2 inside a CONNECT tunnel of a real squid; h2c cannot go through an HTTP proxy."""

    def test_h2_in_a_connect_tunnel(self):
        with TempDir() as tmp, H2Server(tmp, tls=True) as srv, H2Server(tmp, tls=False) as h2c, \
                Squid(tmp) as squid:
            proxy = f'proxy_url: "{squid.url}"'
            targets = [
                {'name': 'tunnel', 'url': srv.url('plain', 'ttft=50,gap=20,chunks=8'),
                 'extra': [tls_line(srv.pki['ca']), 'http_version: "2"', proxy]},
                {'name': 'h2c-via-proxy', 'url': h2c.url('plain', 'ttft=50,gap=20,chunks=8'),
                 'extra': ['http_version: "2"', proxy]},
            ]
            with Exporter(tmp, render_config(targets, {'interval': '3s', 'warmup': 0})) as ex:
                for t in targets:
                    ex.wait_probes(t['name'], 1, timeout=20)
                rows = {t['name']: ex.rows(t['name'])[-1] for t in targets}
            tunnel = rows['tunnel']
            self.assertTrue(tunnel['ok'], tunnel)
            self.assertTrue(tunnel['via_proxy'])
            self.assertEqual(tunnel['http_version'], '2')
            self.assertEqual(tunnel['chunks'], 8)
            self.assertEqual([s['outcome'] for s in srv.streams('plain')][:1], ['complete'])
            squid.wait_entries(f'CONNECT 127.0.0.1:{srv.port} ', 1)
            # An http:// target through an HTTP proxy is forwarded as HTTP/1.1 requests:
            # no h2c there, a clear protocol failure instead of a silent downgrade.
            bad = rows['h2c-via-proxy']
            self.assertFalse(bad['ok'], bad)
            self.assertEqual(bad['reason'], 'protocol', bad)
            self.assertEqual(h2c.streams(), [])


if __name__ == '__main__':
    unittest.main()
