"""Reload (POST /-/reload and SIGHUP): a valid change adds and removes series;
an invalid one keeps the old config probing and flips the reload gauge; a
changed `listen:` moves the listener, or fails the reload whole when the new
address cannot be bound."""
import signal
import socket
import time
import unittest

from harness import (Exporter, TempDir, Upstream, free_port, http_get, http_post, render_config,
                     wait_for)


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

    def test_changed_listen_moves_the_listener_or_fails_whole(self):
        with TempDir() as tmp, Upstream(tmp) as up:
            a = {'name': 'alpha', 'url': up.url('ttft=20,gap=5,chunks=5')}
            old = f'127.0.0.1:{free_port()}'
            with Exporter(tmp, render_config([a], listen=old)) as ex:
                reloads = 'llm_stream_exporter_config_reloads_total'
                self.assertEqual(ex.value(reloads, result='success'), 0)
                self.assertEqual(ex.value(reloads, result='failure'), 0)

                # Moved: the new address answers, the old one refuses, /config says so.
                new = f'127.0.0.1:{free_port()}'
                ex.write_config(render_config([a], listen=new))
                status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 200, body)
                old_base, ex.base = ex.base, f'http://{new}'
                self.assertEqual(http_get(ex.base + '/-/healthy'), (200, 'OK'))
                status, dump = http_get(ex.base + '/config')
                self.assertIn(f'listen: "{new}"', dump)

                def old_refused():
                    try:
                        socket.create_connection(('127.0.0.1', int(old.split(':')[1])),
                                                 timeout=1).close()
                        return False
                    except ConnectionRefusedError:
                        return True
                wait_for(old_refused, 5, what=f'{old} to stop listening')
                self.assertEqual(http_get(old_base + '/-/healthy')[0], 0)
                self.assertEqual(ex.value(reloads, result='success'), 1)
                self.assertEqual(ex.value('llm_stream_exporter_config_last_reload_successful'), 1)

                # Taken: the reload fails whole, with the reason, and nothing moves.
                with socket.socket() as taken:
                    taken.bind(('127.0.0.1', 0))
                    taken.listen(1)
                    busy = f'127.0.0.1:{taken.getsockname()[1]}'
                    b = {'name': 'beta', 'url': up.url('ttft=20,gap=5,chunks=5')}
                    ex.write_config(render_config([a, b], listen=busy))
                    status, body = http_post(ex.base + '/-/reload')
                self.assertEqual(status, 500, body)
                self.assertIn(f'listen: cannot move from {new} to {busy}', body)
                self.assertIn(f'still listening on {new}', body)
                self.assertEqual(ex.value(reloads, result='failure'), 1)
                self.assertEqual(ex.value('llm_stream_exporter_config_last_reload_successful'), 0)
                self.assertNotIn('beta', {l.get('target') for n, l, v in ex.samples()})
                status, dump = http_get(ex.base + '/config')
                self.assertIn(f'listen: "{new}"', dump)
                self.assertIn('listen: cannot move from', ex.proc.output())


if __name__ == '__main__':
    unittest.main()
