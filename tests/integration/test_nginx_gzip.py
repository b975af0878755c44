"""A real nginx with `gzip on` for text/event-stream in front of the upstream.

With proxy buffering (nginx's default) nginx streams an identity response but
holds a gzip-compressed one until the answer is complete: only a client that
asks like a browser (Accept-Encoding: gzip, deflate, br) sees it, and it sees
TTFT close to the whole answer's duration. With proxy_buffering off nginx
flushes the compressor per upstream write, and the compressed stream is
counted chunk by chunk like the plain one.

Each target's first probe is a warmup (cold connections through nginx); the
measured probe runs on the warm connection.
"""
import unittest

from harness import Exporter, Nginx, TempDir, Upstream, render_config

SPEC = 'ttft=100,gap=40,chunks=25'
SCRIPTED_LAST_CHUNK_MS = 100 + 24 * 40


class NginxGzip(unittest.TestCase):
    def test_buffered_gzip_is_seen_only_by_browser_like_clients(self):
        gzip = ['gzip on', 'gzip_types text/event-stream', 'gzip_min_length 0']
        with TempDir() as tmp, Upstream(tmp) as up, \
                Nginx(tmp, up.base, {'buffered': gzip, 'streaming': gzip + ['proxy_buffering off']}) as ngx:
            targets = [
                {'name': 'identity', 'url': ngx.url('buffered', SPEC)},
                {'name': 'browser', 'url': ngx.url('buffered', SPEC), 'extra': ['client: browser']},
                {'name': 'gzip-list', 'url': ngx.url('buffered', SPEC), 'extra': ['accept_encoding: [gzip]']},
                {'name': 'browser-streaming', 'url': ngx.url('streaming', SPEC), 'extra': ['client: browser']},
            ]
            with Exporter(tmp, render_config(targets, {'interval': '3s', 'warmup': 1})) as ex:
                for t in targets:
                    ex.wait_probes(t['name'], 1, timeout=20)
                rows = {t['name']: ex.rows(t['name'])[0] for t in targets}
                coalesced = {l['target']: v for n, l, v in ex.samples()
                             if n == 'llm_stream_coalesced_chunks_total'}
            for name, row in rows.items():
                self.assertTrue(row['ok'], (name, row))
                self.assertEqual(row['chunks'], 25, name)
                self.assertEqual(row['http_version'], '1.1', name)
                self.assertFalse(row['via_proxy'], name)  # a reverse proxy, not an HTTP proxy

            # Identity through the buffering proxy: a healthy stream.
            # (nginx opens a new upstream connection per request: allow 30 ms for the hop.)
            ident = rows['identity']
            self.assertAlmostEqual(ident['ttft_ms'], 100, delta=30)
            self.assertLess(ident['gap_max_ms'], 80)
            self.assertEqual(ident['stalls'], 0)
            self.assertEqual(ident['content_encoding'], 'identity')
            self.assertEqual(ident['coalesced_chunks'], 0)

            # Browser profile through the same proxy: the whole answer arrives at once.
            for name in ('browser', 'gzip-list'):
                b = rows[name]
                self.assertGreater(b['ttft_ms'], SCRIPTED_LAST_CHUNK_MS - 10, name)
                self.assertGreater(b['ttft_ms'], 0.9 * b['duration_ms'], name)
                self.assertLess(b['gap_max_ms'], 5, name)  # every chunk in the same read(s)
                # The row says the answer was compressed and came held together:
                # 25 chunks in at most a few reads.
                self.assertEqual(b['content_encoding'], 'gzip', name)
                self.assertGreaterEqual(b['coalesced_chunks'], 20, name)
                self.assertGreaterEqual(coalesced[name], b['coalesced_chunks'], name)

            # Compressed but flushed per write: counted chunk by chunk with the scripted gaps.
            s = rows['browser-streaming']
            self.assertEqual(s['content_encoding'], 'gzip')
            self.assertEqual(s['coalesced_chunks'], 0)
            self.assertAlmostEqual(s['ttft_ms'], 100, delta=30)
            # On a loaded machine one write of nginx or the upstream can land late
            # (that gap grows, the next one shrinks by as much): the rhythm is
            # checked as a whole, and no single gap may look like buffering
            # (a few ms) or a stall.
            gaps = s['gaps_ms']
            self.assertEqual(len(gaps), 24)
            self.assertAlmostEqual(sorted(gaps)[12], 40, delta=5, msg=gaps)
            self.assertAlmostEqual(sum(gaps), 24 * 40, delta=60, msg=gaps)
            self.assertGreaterEqual(sum(1 for g in gaps if abs(g - 40) <= 15), 20, gaps)
            self.assertTrue(all(10 < g < 150 for g in gaps), gaps)


if __name__ == '__main__':
    unittest.main()
