"""Reload (POST /-/reload and SIGHUP): a valid change adds and removes series;
an invalid one keeps the old config probing and flips the reload gauge."""
import signal
import time
import unittest

from harness import Exporter, TempDir, Upstream, http_get, http_post, render_config, wait_for


def series(ex, name):
    return {(l.get('target'), l.get('prompt')) for n, l, v in ex.samples() if n == name}


class Reload(unittest.TestCase):
    def test_reload_adds_removes_and_survives_bad_config(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            a = {'name': 'alpha', 'url': up.url('ttft=20,gap=5,chunks=5'), 'prompts': 'short, long',
                 'extra': ['interval: 500ms']}
            b = {'name': 'beta', 'url': up.url('ttft=20,gap=5,chunks=5')}
            with Exporter(tmp, render_config([a, b])) as ex:
                # Every implied series exists from startup, at zero.
                s = series(ex, 'llm_stream_stalls_total')
                self.assertEqual(s, {('alpha', 'short'), ('alpha', 'long'), ('beta', 'short')})
                self.assertEqual(ex.value('llm_stream_exporter_config_last_reload_successful'), 1)

                # Valid change: drop beta and alpha's long prompt, add gamma.
                c = {'name': 'gamma', 'url': up.url('ttft=20,gap=5,chunks=5')}
                a2 = dict(a, prompts='short')
                ex.write_config(render_config([a2, c]))
                status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 200, body)
                s = series(ex, 'llm_stream_stalls_total')
                self.assertEqual(s, {('alpha', 'short'), ('gamma', 'short')})
                self.assertNotIn('beta', {t for t, _ in series(ex, 'llm_stream_time_to_first_token_seconds_bucket')})
                ex.wait_probes('gamma', 1)

                # Invalid change: keeps probing with the old config.
                before = ex.value('llm_stream_probes_total', target='alpha')
                ex.write_config('targets: [ {name: broken\n')
                status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 500)
                self.assertIn('exporter.yaml:', body)
                self.assertEqual(ex.value('llm_stream_exporter_config_last_reload_successful'), 0)
                ex.wait_probes('alpha', before + 2, timeout=10)
                self.assertEqual(series(ex, 'llm_stream_stalls_total'), {('alpha', 'short'), ('gamma', 'short')})

                # SIGHUP with a fixed config succeeds again.
                ex.write_config(render_config([a2]))
                ex.proc.p.send_signal(signal.SIGHUP)
                wait_for(lambda: ex.value('llm_stream_exporter_config_last_reload_successful') == 1, 5,
                         what='reload via SIGHUP')
                self.assertEqual(series(ex, 'llm_stream_stalls_total'), {('alpha', 'short')})

                # GET is not a reload.
                status, _ = http_get(ex.base + '/-/reload')
                self.assertEqual(status, 405)

                # SIGTERM: clean exit within a second.
                t0 = time.monotonic()
                rc = ex.proc.stop(signal.SIGTERM, timeout=5)
                self.assertEqual(rc, 0)
                self.assertLess(time.monotonic() - t0, 1.0)


if __name__ == '__main__':
    unittest.main()
